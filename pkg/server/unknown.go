package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// unknownFieldKey holds, in a request's context, the fields of its JSON
// body that the endpoint does not know.
const unknownFieldKey = "mixchat.unknownField"

// teeBody reads through a TeeReader and closes the original body.
type teeBody struct {
	io.Reader
	io.Closer
}

// captureBody makes the request body's bytes land in buf as it is read.
func captureBody(c *gin.Context, buf *bytes.Buffer) {
	if c.Request.Body != nil {
		c.Request.Body = teeBody{io.TeeReader(c.Request.Body, buf), c.Request.Body}
	}
}

// noteUnknownField records the top-level fields of raw that T does not
// have. Unknown fields are let through (clients of Chatchat send fields of
// their own), but a request refused as malformed says which they were: a
// misspelled "qeury" is reported as unknown, not as a missing query.
func noteUnknownField[T any](c *gin.Context, raw []byte) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return
	}
	var unknown []string
	for range 8 { // a bound: a body naming many unknown fields gets the first few
		b, err := json.Marshal(fields)
		if err != nil {
			return
		}
		var again T
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(&again)
		name, ok := "", false
		if err != nil {
			name, ok = strings.CutPrefix(err.Error(), "json: unknown field ")
		}
		key, uerr := strconv.Unquote(name)
		if !ok || uerr != nil || fields[key] == nil {
			break // no unknown field left at the top level
		}
		unknown = append(unknown, name)
		delete(fields, key)
	}
	if len(unknown) > 0 {
		c.Set(unknownFieldKey, unknown)
	}
}

// withUnknownField puts the unknown fields noted for the request in front of
// the message of a 400 reply.
func withUnknownField(c *gin.Context, status int, msg string) string {
	if status != http.StatusBadRequest {
		return msg
	}
	v, _ := c.Get(unknownFieldKey)
	switch names, _ := v.([]string); len(names) {
	case 0:
	case 1:
		return "unknown field " + names[0] + " in the request body (" + msg + ")"
	default:
		return "unknown fields " + strings.Join(names, ", ") + " in the request body (" + msg + ")"
	}
	return msg
}
