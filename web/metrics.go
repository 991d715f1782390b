package web

import (
	"strconv"
	"time"

	"github.com/countersign/countersign/db"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics is the Prometheus registry of one server: request counts and
// latency by route, database pool statistics, Go runtime.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(store *db.DB) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "countersign_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 60},
		}, []string{"route", "method"}),
	}
	stat := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	counter := func(name, help string, f func(db.GroupStats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(f(store.GroupStats())) })
	}
	m.reg.MustRegister(m.requests, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		stat("countersign_db_pool_total_conns", "Connections in the pool.", func() float64 { return float64(store.Pool.Stat().TotalConns()) }),
		stat("countersign_db_pool_idle_conns", "Idle connections in the pool.", func() float64 { return float64(store.Pool.Stat().IdleConns()) }),
		stat("countersign_db_pool_acquired_conns", "Connections in use.", func() float64 { return float64(store.Pool.Stat().AcquiredConns()) }),
		stat("countersign_db_pool_max_conns", "Pool size limit.", func() float64 { return float64(store.Pool.Stat().MaxConns()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "countersign_db_pool_acquires_total", Help: "Connection acquisitions."},
			func() float64 { return float64(store.Pool.Stat().AcquireCount()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "countersign_db_pool_empty_acquires_total", Help: "Acquisitions that had to wait for a connection."},
			func() float64 { return float64(store.Pool.Stat().EmptyAcquireCount()) }),
		counter("countersign_check_read_groups_total", "Statements that read the first step of a group of concurrent checks (those that succeeded).",
			func(s db.GroupStats) int64 { return s.ReadGroups }),
		counter("countersign_check_reads_total", "Checks read by those statements (divided by the groups: the mean group size).",
			func(s db.GroupStats) int64 { return s.Reads }),
		counter("countersign_check_write_groups_total", "Batches that wrote what a group of concurrent checks record (those that committed).",
			func(s db.GroupStats) int64 { return s.WriteGroups }),
		counter("countersign_check_writes_total", "Checks whose records those batches wrote.",
			func(s db.GroupStats) int64 { return s.Writes }),
	)
	return m
}

func (m *metrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		status := c.Response().Status
		if err != nil {
			status, _, _ = publicError(err)
		}
		m.requests.WithLabelValues(route, c.Request().Method, strconv.Itoa(status)).Inc()
		m.latency.WithLabelValues(route, c.Request().Method).Observe(time.Since(start).Seconds())
		return err
	}
}

func (m *metrics) handler() echo.HandlerFunc {
	return echo.WrapHandler(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
}
