package server

import (
	"github.com/gin-gonic/gin"

	"github.com/mixchat/mixchat/web"
)

// webRoutes serves the web app: the page at / and its files under
// /assets/. Every other path stays with the API (and its JSON 404).
func (s *Server) webRoutes(r *gin.Engine) {
	h := gin.WrapH(web.Handler())
	for _, p := range []string{"/", "/index.html", "/assets/*path"} {
		r.GET(p, h)
		r.HEAD(p, h)
	}
}
