package llm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Models looks a model up by name ("" means the default), returning it
// and its resolved name; an unknown name gives an *UnknownModelError.
// *Registry satisfies it. It is the one model-lookup contract: the
// answerers, the Mixer and the server all take it.
type Models interface {
	Get(name string) (Model, string, error)
}

// Registry holds the configured models by name. It is itself a Model and a
// Generator that sends each request to the model its Request.Model names
// (the default one when empty). It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	def    string
	models map[string]Model
}

// NewRegistry returns an empty registry whose default model is defaultName.
// An empty defaultName means the first model added.
func NewRegistry(defaultName string) *Registry {
	return &Registry{def: defaultName, models: map[string]Model{}}
}

// Add registers m under name, replacing any model of that name.
func (r *Registry) Add(name string, m Model) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.def == "" {
		r.def = name
	}
	r.models[name] = m
}

// Get returns the model called name ("" means the default) and its name.
// An unknown name gives an *UnknownModelError.
func (r *Registry) Get(name string) (Model, string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if name == "" {
		name = r.def
	}
	if m, ok := r.models[name]; ok {
		return m, name, nil
	}
	return nil, "", &UnknownModelError{Name: name, Known: r.names()}
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.names()
}

func (r *Registry) names() []string {
	return slices.Sorted(maps.Keys(r.models))
}

// Default returns the name of the default model.
func (r *Registry) Default() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.def
}

// ModelInfo describes a registered model.
type ModelInfo struct {
	Name string `json:"name"`
	// Extractive is true for models that assemble replies from the
	// request's context instead of generating text (the offline model).
	Extractive bool `json:"extractive"`
	Default    bool `json:"default"`
}

// Info describes the model called name ("" means the default). A model is
// extractive when it has a method Extractive() bool that returns true.
func (r *Registry) Info(name string) (ModelInfo, error) {
	m, name, err := r.Get(name)
	if err != nil {
		return ModelInfo{}, err
	}
	return ModelInfo{Name: name, Extractive: IsExtractive(m), Default: name == r.Default()}, nil
}

// IsExtractive reports whether m is an extractive model: one with a method
// Extractive() bool that returns true.
func IsExtractive(m Model) bool {
	e, ok := m.(interface{ Extractive() bool })
	return ok && e.Extractive()
}

// Complete sends req to the model req.Model names. The response's Model is
// the resolved name when the model left it empty.
func (r *Registry) Complete(ctx context.Context, req Request) (Response, error) {
	m, name, err := r.Get(req.Model)
	if err != nil {
		return Response{}, err
	}
	resp, err := m.Complete(ctx, req)
	if resp.Model == "" {
		resp.Model = name
	}
	return resp, err
}

// Stream streams req from the model req.Model names.
func (r *Registry) Stream(ctx context.Context, req Request, fn func(delta string) error) (Response, error) {
	m, name, err := r.Get(req.Model)
	if err != nil {
		return Response{}, err
	}
	resp, err := m.Stream(ctx, req, fn)
	if resp.Model == "" {
		resp.Model = name
	}
	return resp, err
}

// Generate sends req and its grounding to the model req.Model names
// (AsGenerator: a model that reads groundings gets g).
func (r *Registry) Generate(ctx context.Context, req Request, g Grounding, fn func(delta string) error) (Response, error) {
	m, name, err := r.Get(req.Model)
	if err != nil {
		return Response{}, err
	}
	resp, err := AsGenerator(m).Generate(ctx, req, g, fn)
	if resp.Model == "" {
		resp.Model = name
	}
	return resp, err
}

// UnknownModelError is returned for a model name that is not configured.
type UnknownModelError struct {
	Name  string
	Known []string
}

func (e *UnknownModelError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("unknown model %q: no models are configured", e.Name)
	}
	return fmt.Sprintf("unknown model %q (configured: %s)", e.Name, strings.Join(e.Known, ", "))
}
