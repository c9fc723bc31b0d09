// Package prometheus holds seckill's Prometheus alerting rules
// (seckill-alerts.yml) and their tests: each alert evaluated by
// Prometheus's own query engine and template expander on series that must
// make it fire and on series that must not, and every metric, label and value it names found
// in the code that exports them. A module of its own, so that the
// Prometheus server's packages the tests use stay out of the engine's
// build.
package prometheus
