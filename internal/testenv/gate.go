package testenv

import (
	"context"

	"github.com/countersign/countersign/client"
)

// GateResult is what a Gate call returned.
type GateResult struct {
	Out client.Outcome
	Err error
}

// GateAsync runs c.Gate(call) in the background, as a waiting runtime does.
func GateAsync(c *client.Client, call client.Call) chan GateResult {
	ch := make(chan GateResult, 1)
	go func() {
		out, err := c.Gate(context.Background(), call)
		ch <- GateResult{out, err}
	}()
	return ch
}
