package server

import "github.com/gin-gonic/gin"

// opsRoutes registers the operational endpoints (/readyz, /metrics).
func (s *Server) opsRoutes(r gin.IRouter) {}
