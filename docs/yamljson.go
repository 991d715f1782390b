package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// yamlToJSON converts one YAML document to JSON. It walks the parsed nodes
// rather than decoding into maps, so that the JSON keeps the order of the
// source (paths, then operations, then schemas, as written) and every key
// stays a string ("200", not 200).
func yamlToJSON(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("openapi: parse yaml: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("openapi: expected one YAML document")
	}
	var buf bytes.Buffer
	if err := writeNode(&buf, doc.Content[0]); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("openapi: indent json: %w", err)
	}
	return out.Bytes(), nil
}

func writeNode(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.AliasNode:
		return writeNode(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, n.Content[i].Value)
			buf.WriteByte(':')
			if err := writeNode(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeNode(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		return writeScalar(buf, n)
	default:
		return fmt.Errorf("openapi: unexpected YAML node at line %d", n.Line)
	}
	return nil
}

func writeScalar(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!str":
		writeString(buf, n.Value)
	case "!!bool", "!!null":
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("openapi: line %d: %w", n.Line, err)
		}
		b, _ := json.Marshal(v)
		buf.Write(b)
	case "!!int", "!!float":
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return fmt.Errorf("openapi: line %d: number %q: %w", n.Line, n.Value, err)
		}
		b, err := json.Marshal(f)
		if err != nil {
			return fmt.Errorf("openapi: line %d: number %q: %w", n.Line, n.Value, err)
		}
		buf.Write(b)
	default:
		return fmt.Errorf("openapi: line %d: unsupported YAML tag %s (quote the value)", n.Line, n.ShortTag())
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s)
	buf.Write(b)
}
