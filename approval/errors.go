// Package approval is Countersign's domain: tool calls, policy, decisions,
// argument digests and previews, and the reason codes a model receives. It
// imports no HTTP and no SQL; the web and db packages adapt it.
package approval

import (
	"errors"
	"fmt"
)

// Kind classifies an error for the transport layer: the web package maps each
// kind to one HTTP status in one place.
type Kind int

// Error kinds.
const (
	KindInternal      Kind = iota // a bug or an unavailable dependency; never shown in detail
	KindInvalid                   // malformed input (400)
	KindUnauthorized              // no or bad credentials (401)
	KindForbidden                 // authenticated but not allowed, when existence may be shown (403)
	KindNotFound                  // absent, or not the caller's to see (404)
	KindConflict                  // the state changed under the caller (409)
	KindUnprocessable             // well-formed but not acceptable (422)
)

// Error is the one error type of the domain: a kind for the transport, a
// stable machine code, and a message that is safe to show to a person or a
// model.
type Error struct {
	Kind    Kind
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with a formatted message.
func Errorf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError returns the *Error in err's chain, or nil.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// KindOf returns the kind of err, KindInternal for anything that is not an
// *Error.
func KindOf(err error) Kind {
	if e := AsError(err); e != nil {
		return e.Kind
	}
	return KindInternal
}

// Common error codes that are not reason codes.
const (
	CodeNotFound       = "not_found"
	CodeInvalidRequest = "invalid_request"
	CodeUnauthorized   = "unauthorized"
	CodeInternal       = "internal_error"
	CodeAlreadyDecided = "already_answered"
	CodeExpired        = "expired"
	CodeNotOffered     = "decision_not_offered"
	CodeConsumed       = "already_consumed"
	CodeNotApproved    = "not_approved"
	CodeCallMismatch   = "call_mismatch"
	CodeUnknownTool    = "unknown_tool"
	// CodeConnectorDeleted: a single-tool registration for a connector an
	// administrator deleted; only a full sync brings a connector back.
	CodeConnectorDeleted = "connector_deleted"
)
