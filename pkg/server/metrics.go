package server

import "github.com/gin-gonic/gin"

// metricsRoutes registers GET /metrics, the Prometheus metrics of this
// process (see docs/operations.md, "Observability").
func (s *Server) metricsRoutes(r gin.IRouter) {
	r.GET("/metrics", gin.WrapH(s.obs.Handler()))
}
