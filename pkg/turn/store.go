package turn

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mixchat/mixchat/pkg/auth"
	"github.com/mixchat/mixchat/pkg/llm"
	"github.com/mixchat/mixchat/pkg/memory"
	"github.com/mixchat/mixchat/pkg/obs"
)

// storeTimeout bounds storing a turn, which runs even after the request's
// context ended (a client that went away still gets its turn stored).
const storeTimeout = 10 * time.Second

// store prices the reply and, when the request names a conversation,
// writes question and answer in one transaction, names a new conversation
// after its first question and tells the memory. A reply cut short is
// stored with what was sent as its content and the model's text as the
// original.
func (r *Runner) store(ctx context.Context, res *Result, question string, extra map[string]any) error {
	auth.AddTokens(ctx, res.Response.Usage.TotalTokens) // the key's tokens-per-minute limit
	res.Usage = r.usage(ctx, res.calls, res.Response)
	if res.ConversationID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	usage := res.Response.Usage
	all := map[string]any{"usage": res.Usage} // tokens, latency, price
	for k, v := range extra {
		all[k] = v
	}
	meta := memory.Metadata{Source: "llm", Model: res.Response.Model, Extractive: res.Response.Extractive, Usage: &usage, Extra: all}
	content := res.Text
	if res.Interrupted {
		meta.Interrupted, meta.Original = true, res.Text
		content = res.Sent
	}
	t, err := r.d.Store.AppendTurn(ctx, res.ConversationID,
		memory.Message{Role: llm.RoleUser, Content: question, Metadata: memory.Metadata{Source: "message"}},
		memory.Message{ID: res.AnswerID, Role: llm.RoleAssistant, Content: content, Metadata: meta})
	if err != nil {
		return fmt.Errorf("store turn: %w", err)
	}
	res.TurnID = t.ID
	if t.ID == 1 {
		r.name(ctx, res.ConversationID, question)
	}
	if r.d.Memory != nil {
		r.d.Memory.Remember(ctx, res.ConversationID, t)
	}
	return nil
}

// usage is a reply's usage as stored and returned: the tokens of every
// model call it took, the time since the request arrived, and the price.
func (r *Runner) usage(ctx context.Context, calls []llm.Response, resp llm.Response) obs.Usage {
	if len(calls) == 0 {
		calls = []llm.Response{resp}
	}
	var latency time.Duration
	if start, ok := obs.RequestStart(ctx); ok {
		latency = time.Since(start)
	}
	if r.d.Obs == nil {
		return obs.Prices{}.Usage(calls, latency)
	}
	return r.d.Obs.Prices().Usage(calls, latency)
}

// name gives a conversation without a name its first question as title.
// A failure is logged: the turn is stored all the same.
func (r *Runner) name(ctx context.Context, conversationID, question string) {
	conv, err := r.d.Store.Conversation(ctx, conversationID)
	if err != nil || conv.Name != "" {
		return
	}
	if err := r.d.Store.RenameConversation(ctx, conversationID, Title(question)); err != nil {
		r.d.Log.WarnContext(ctx, "name conversation", "conversation", conversationID, "err", err)
	}
}

// titleRunes is the longest title Title makes, in characters.
const titleRunes = 40

// Title makes a conversation title from a question: its first line, spaces
// collapsed, cut at a word boundary (any character for CJK text) to at
// most titleRunes characters with an ellipsis when cut.
func Title(question string) string {
	line := strings.TrimSpace(question)
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	line = strings.Join(strings.Fields(line), " ")
	if utf8.RuneCountInString(line) <= titleRunes {
		return line
	}
	runes := []rune(line)
	cut := string(runes[:titleRunes-1])
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 && runes[titleRunes-1] != ' ' {
		// Cut inside a word: end at the word before it.
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:，。；：") + "…"
}
