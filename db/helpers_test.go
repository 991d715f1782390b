package db_test

import "net/url"

func withDB(u, name string) string {
	p, _ := url.Parse(u)
	p.Path = "/" + name
	return p.String()
}
