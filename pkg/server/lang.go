package server

import (
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// wantsEnglish reports whether the messages of a reply without a question
// (an upload's per-file errors, say) should be in English: the request's
// Accept-Language prefers a language other than Chinese. Without the
// header they stay in Chatchat's Chinese, which its clients show as is.
// (Answers follow the question's language instead.)
func wantsEnglish(c *gin.Context) bool {
	best, bestQ := "", -1.0
	for _, part := range strings.Split(c.GetHeader("Accept-Language"), ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if tag == "" || tag == "*" {
			continue
		}
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		if q > bestQ {
			best, bestQ = strings.ToLower(tag), q
		}
	}
	return best != "" && !strings.HasPrefix(best, "zh")
}
