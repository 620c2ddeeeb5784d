package obs

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mixchat/mixchat/pkg/llm"
)

// Price is what a model's tokens cost, per million.
type Price struct {
	InputPerMillion  float64 `yaml:"input_per_million" json:"input_per_million"`
	OutputPerMillion float64 `yaml:"output_per_million" json:"output_per_million"`
	// Currency is an ISO 4217 code such as USD or CNY.
	Currency string `yaml:"currency" json:"currency"`
}

// Prices are the prices of the models, by configured model name: the
// "llm.prices" setting, e.g.
//
//	prices:
//	  deepseek-chat: {input_per_million: 2, output_per_million: 8, currency: CNY}
type Prices map[string]Price

// Validate checks p; every message names the field (under "llm.prices.").
func (p Prices) Validate() error {
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(p)) {
		pr := p[n]
		field := "llm.prices." + n
		if strings.TrimSpace(n) == "" {
			errs = append(errs, fmt.Errorf("config: llm.prices: an empty model name is not valid; use the model's configured name"))
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"input_per_million", pr.InputPerMillion}, {"output_per_million", pr.OutputPerMillion}} {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				errs = append(errs, fmt.Errorf("config: %s.%s: %v is not valid; want 0 or more", field, f.name, f.v))
			}
		}
		if !validCurrency(pr.Currency) {
			errs = append(errs, fmt.Errorf("config: %s.currency: %q is not valid; want a three-letter code such as USD or CNY", field, pr.Currency))
		}
	}
	return errors.Join(errs...)
}

// Unknown returns the priced model names that are not in models, sorted.
func (p Prices) Unknown(models []string) []string {
	var out []string
	for n := range p {
		if !slices.Contains(models, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func validCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for _, r := range c {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// Usage is one reply's usage as stored with its turn and returned by the
// API, after Dify's message usage: the tokens of every model call the
// reply took, the reply's latency, and its price when every priced call's
// model has a configured price in one currency.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// Estimated is true when some counts were made locally rather than
	// reported by the upstream.
	Estimated bool `json:"estimated,omitempty"`
	// Latency is the time from the request's arrival to the end of the
	// reply, in seconds.
	Latency float64 `json:"latency"`
	// Prices, set only when the reply could be priced.
	PromptPrice     *float64 `json:"prompt_price,omitempty"`
	CompletionPrice *float64 `json:"completion_price,omitempty"`
	TotalPrice      *float64 `json:"total_price,omitempty"`
	Currency        string   `json:"currency,omitempty"`
}

// Tokens returns the token counts as an llm.Usage.
func (u Usage) Tokens() llm.Usage {
	return llm.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens, Estimated: u.Estimated}
}

// Usage sums the tokens of calls (the model responses a reply took; each
// Response.Model is the configured model name) and prices them. A call
// with no tokens, or from an extractive model (the offline model costs
// nothing), needs no price; when any other call's model has no price, or
// the prices' currencies differ, the usage has no price.
func (p Prices) Usage(calls []llm.Response, latency time.Duration) Usage {
	var tokens llm.Usage
	var in, out float64
	currency := ""
	priced := true
	for _, c := range calls {
		tokens = tokens.Add(c.Usage)
		if c.Extractive || (c.Usage.PromptTokens == 0 && c.Usage.CompletionTokens == 0) {
			continue
		}
		pr, ok := p[c.Model]
		if !ok || (currency != "" && pr.Currency != currency) {
			priced = false
			continue
		}
		currency = pr.Currency
		in += float64(c.Usage.PromptTokens) * pr.InputPerMillion / 1e6
		out += float64(c.Usage.CompletionTokens) * pr.OutputPerMillion / 1e6
	}
	u := Usage{PromptTokens: tokens.PromptTokens, CompletionTokens: tokens.CompletionTokens, TotalTokens: tokens.TotalTokens,
		Estimated: tokens.Estimated, Latency: round(latency.Seconds(), 6)}
	if priced && currency != "" {
		in, out = round(in, 9), round(out, 9)
		total := round(in+out, 9)
		u.PromptPrice, u.CompletionPrice, u.TotalPrice, u.Currency = &in, &out, &total, currency
	}
	return u
}

// round rounds x to n decimals, so that stored prices read as written.
func round(x float64, n int) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', n, 64), 64)
	return v
}
