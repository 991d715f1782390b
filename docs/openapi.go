// Package docs holds the runtime API's OpenAPI document, embedded so that
// the server can serve it and tests can validate traffic against it.
package docs

import (
	_ "embed"
	"sync"
)

// OpenAPIYAML is the committed source of the OpenAPI 3.1 document.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte

// OpenAPIJSON is the document as JSON, converted once from OpenAPIYAML
// with its keys in the order they are written.
var OpenAPIJSON = sync.OnceValues(func() ([]byte, error) { return yamlToJSON(OpenAPIYAML) })
