// Package e2e holds mixchat's end-to-end tests: they build the mixchat
// binary, run `mixchat serve` on 127.0.0.1 with a fresh data directory and
// a local OpenAI-compatible test LLM (pkg/llm/llmtest) next to the offline
// model, and drive the web app in the system's headless Chromium with
// chromedp. Run them with
//
//	scripts/chromium.sh            # installs chromium and a CJK font when missing
//	go test ./e2e/                 # add -screenshots to refresh docs/screenshots
//
// They skip, saying why, when /usr/bin/chromium is absent.
package e2e
