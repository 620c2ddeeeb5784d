package llm

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// decodeChunk decodes one chunk of a streamed reply into c, exactly as
// json.Unmarshal(raw, c) does. A reply comes in one chunk per token or so,
// each a small object of the same shape, and decoding them was the
// largest part of a streamed call's CPU: the usual shape (ASCII keys, the
// choices' delta content and finish reason, fields Stream does not read)
// is read here in one pass; anything else (a usage object, a key that
// differs from a field's name only by case, a duplicate key, a value of an
// unexpected type, an escape, bytes that are not valid UTF-8 or not JSON)
// is left to encoding/json, so the result and the errors stay its.
func decodeChunk(raw []byte, c *streamChunk) error {
	*c = streamChunk{}
	p := chunkParser{b: raw}
	if p.chunk(c) {
		return nil
	}
	*c = streamChunk{}
	return json.Unmarshal(raw, c)
}

// chunkParser reads the common shape of a stream chunk; every method
// returns false at anything it leaves to encoding/json.
type chunkParser struct {
	b []byte
	i int
}

func (p *chunkParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c,
// consuming it when it is.
func (p *chunkParser) next(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *chunkParser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// chunk reads the whole of p.b as one object into c.
func (p *chunkParser) chunk(c *streamChunk) bool {
	var choices, usage bool
	ok := p.object(func(key []byte) bool {
		switch {
		case string(key) == "choices" && !choices:
			choices = true
			return p.choices(c)
		case string(key) == "usage" && !usage:
			usage = true
			start := p.i
			if !p.skip(0) {
				return false
			}
			v := p.b[start:p.i]
			if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
				return true
			}
			return json.Unmarshal(v, &c.Usage) == nil
		case bytes.EqualFold(key, []byte("choices")), bytes.EqualFold(key, []byte("usage")):
			return false // a second one, or another spelling: encoding/json's rules
		}
		return p.skip(0)
	})
	if !ok {
		return false
	}
	p.ws()
	return p.i == len(p.b)
}

// object reads an object, calling member with each key (its value is next
// in p). A key with an escape or bytes past ASCII is left to encoding/json.
func (p *chunkParser) object(member func(key []byte) bool) bool {
	if !p.next('{') {
		return false
	}
	if p.next('}') {
		return true
	}
	for {
		if !p.next('"') {
			return false
		}
		start := p.i
		for p.i < len(p.b) && p.b[p.i] != '"' {
			if c := p.b[p.i]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				return false
			}
			p.i++
		}
		if p.i == len(p.b) {
			return false
		}
		key := p.b[start:p.i]
		p.i++
		if !p.next(':') || !member(key) {
			return false
		}
		if p.next('}') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

// choices reads the choices array (or null) into c.Choices.
func (p *chunkParser) choices(c *streamChunk) bool {
	if p.null() {
		c.Choices = nil
		return true
	}
	if !p.next('[') {
		return false
	}
	c.Choices = c.Choices[:0]
	if c.Choices == nil {
		c.Choices = make([]chunkChoice, 0, 1)
	}
	if p.next(']') {
		return true
	}
	for {
		var ch chunkChoice
		if !p.choice(&ch) {
			return false
		}
		c.Choices = append(c.Choices, ch)
		if p.next(']') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

func (p *chunkParser) choice(ch *chunkChoice) bool {
	if p.null() {
		return true
	}
	var delta, finish bool
	return p.object(func(key []byte) bool {
		switch {
		case string(key) == "delta" && !delta:
			delta = true
			if p.null() {
				return true
			}
			var content bool
			return p.object(func(key []byte) bool {
				switch {
				case string(key) == "content" && !content:
					content = true
					return p.str(&ch.Delta.Content)
				case bytes.EqualFold(key, []byte("content")):
					return false
				}
				return p.skip(0)
			})
		case string(key) == "finish_reason" && !finish:
			finish = true
			return p.str(&ch.FinishReason)
		case bytes.EqualFold(key, []byte("delta")), bytes.EqualFold(key, []byte("finish_reason")):
			return false
		}
		return p.skip(0)
	})
}

// null consumes a null literal when one is next.
func (p *chunkParser) null() bool {
	p.ws()
	if bytes.HasPrefix(p.b[p.i:], []byte("null")) {
		p.i += 4
		return true
	}
	return false
}

// str reads a string (or null, which leaves *s as it is) into *s: one
// of valid UTF-8 and without escapes as it is, others through
// encoding/json.
func (p *chunkParser) str(s *string) bool {
	if p.null() {
		return true
	}
	if p.peek() != '"' {
		return false
	}
	start := p.i
	escaped, ascii, ok := p.quoted()
	if !ok {
		return false
	}
	v := p.b[start+1 : p.i-1]
	switch {
	case escaped:
		return json.Unmarshal(p.b[start:p.i], s) == nil
	case !ascii && !utf8.Valid(v):
		return false
	}
	*s = string(v)
	return true
}

// quoted consumes the string that starts at p.i, checking its escapes,
// and reports whether it had any and whether it is all ASCII.
func (p *chunkParser) quoted() (escaped, ascii, ok bool) {
	b, i := p.b, p.i+1
	ascii = true
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			p.i = i + 1
			return escaped, ascii, true
		case c < 0x20:
			return false, false, false
		case c >= utf8.RuneSelf:
			ascii = false
		case c == '\\':
			escaped = true
			i++
			if i == len(b) {
				return false, false, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return false, false, false
				}
				for _, h := range b[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false, false, false
					}
				}
				i += 4
			default:
				return false, false, false
			}
		}
		i++
	}
	return false, false, false
}

// maxSkipDepth bounds the nesting of the values skipped; deeper ones are
// left to encoding/json.
const maxSkipDepth = 64

// skip consumes one JSON value, checking its syntax as encoding/json does.
func (p *chunkParser) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch p.peek() {
	case '{':
		return p.object(func([]byte) bool { return p.skip(depth + 1) })
	case '[':
		p.i++
		if p.next(']') {
			return true
		}
		for {
			if !p.skip(depth + 1) {
				return false
			}
			if p.next(']') {
				return true
			}
			if !p.next(',') {
				return false
			}
		}
	case '"':
		_, _, ok := p.quoted()
		return ok
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	}
	return p.number()
}

func (p *chunkParser) literal(s string) bool {
	if bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		p.i += len(s)
		return true
	}
	return false
}

// number consumes a number of JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *chunkParser) number() bool {
	b, i := p.b, p.i
	digit := func() bool { return i < len(b) && b[i] >= '0' && b[i] <= '9' }
	digits := func() bool {
		if !digit() {
			return false
		}
		for digit() {
			i++
		}
		return true
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	p.i = i
	return true
}
