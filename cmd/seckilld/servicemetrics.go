package main

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// serviceMetrics is the registerer of one service's metrics (the
// engine's, a cell's agents', the HTTP API's) in the registry /metrics
// serves: it remembers what it registered, and the service's close takes
// those out again. A replica's primary tenure keeps one registry (its
// stream's metrics and the replica's are in it) across an engine closed
// and opened again, which a switchover that its standby did not catch up
// with does (switchover.go): the metrics of the engine opened again would
// otherwise be refused as registered already, and the engine's are
// registered with MustRegister.
type serviceMetrics struct {
	reg prometheus.Registerer

	mu         sync.Mutex
	registered []prometheus.Collector
}

func newServiceMetrics(reg prometheus.Registerer) *serviceMetrics {
	return &serviceMetrics{reg: reg}
}

// Register implements prometheus.Registerer.
func (m *serviceMetrics) Register(c prometheus.Collector) error {
	if err := m.reg.Register(c); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.registered = append(m.registered, c)
	return nil
}

// MustRegister implements prometheus.Registerer.
func (m *serviceMetrics) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := m.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister implements prometheus.Registerer.
func (m *serviceMetrics) Unregister(c prometheus.Collector) bool {
	m.mu.Lock()
	if i := slices.Index(m.registered, c); i >= 0 {
		m.registered = slices.Delete(m.registered, i, i+1)
	}
	m.mu.Unlock()
	return m.reg.Unregister(c)
}

// unregisterAll takes every metric the service registered out of the
// registry.
func (m *serviceMetrics) unregisterAll() {
	m.mu.Lock()
	registered := m.registered
	m.registered = nil
	m.mu.Unlock()
	for _, c := range registered {
		m.reg.Unregister(c)
	}
}
