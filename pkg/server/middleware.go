package server

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
)

const serverKey = "mixchat.server"

// recoverer turns a panic in a handler into a logged 500 instead of a
// dropped connection.
func (s *Server) recoverer() gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Set(serverKey, s)
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.ErrorContext(c.Request.Context(), "handler panic", "path", c.Request.URL.Path, "panic", fmt.Sprint(v))
				if !c.Writer.Written() {
					writeError(c, fmt.Errorf("internal error: %v", v))
				}
			}
		}()
		c.Next()
	}
}

// limitBody caps request bodies at MaxBodyBytes, except multipart uploads,
// whose handlers set their own limit.
func (s *Server) limitBody() gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Body != nil && c.ContentType() != "multipart/form-data" {
			c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, s.opts.MaxBodyBytes)
		}
		c.Next()
	}
}
