package handlers

import (
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// Every line ending inside data becomes a data line of its own, so no
// reader (which ends lines at CRLF, LF and a lone CR) sees a line that
// does not start with "data: ".
func TestWriteEventFraming(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"OneLine", "<li>x</li>", "event: new\ndata: <li>x</li>\n\n"},
		{"LF", "a\nb", "event: new\ndata: a\ndata: b\n\n"},
		{"CRLF", "a\r\nb", "event: new\ndata: a\ndata: b\n\n"},
		{"LoneCR", "to@acme.example\r</dd><dd>bcc", "event: new\ndata: to@acme.example\ndata: </dd><dd>bcc\n\n"},
		{"CRThenField", "cleanup\revent: ignored\r\rdata: x", "event: new\ndata: cleanup\ndata: event: ignored\ndata: \ndata: data: x\n\n"},
		{"BlankLinesInData", "a\n\nb\r\n\r\n", "event: new\ndata: a\ndata: \ndata: b\ndata: \ndata: \n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			if err := writeEvent(echo.NewResponse(rec, echo.New()), "new", tt.data); err != nil {
				t.Fatal(err)
			}
			if got := rec.Body.String(); got != tt.want {
				t.Fatalf("got %q\nwant %q", got, tt.want)
			}
		})
	}
	for _, name := range []string{"", "new\rdata: x", "new\nx", "new\r\n"} {
		rec := httptest.NewRecorder()
		if err := writeEvent(echo.NewResponse(rec, echo.New()), name, "x"); err == nil || rec.Body.Len() != 0 {
			t.Errorf("event name %q was written: %q", name, rec.Body.String())
		}
	}
}
