package metrics

import dto "github.com/prometheus/client_model/go"

// Sample is the value of the first sample of the family called name
// whose labels include every pair of want (counter, gauge or untyped),
// and false when there is none: how tests and tools read a scrape
// parsed with expfmt or gathered from a registry.
func Sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}
