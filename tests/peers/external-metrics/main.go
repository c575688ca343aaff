// An external-metrics adapter for the side-by-side of headroom's reactive scaling with the
// Kubernetes HorizontalPodAutoscaler: it serves external.metrics.k8s.io (through the API server's
// aggregation layer) from Prometheus, so the HPA in the test control plane's
// kube-controller-manager reads the same series headroom reads.
//
// An external metric request for metric M with label selector S is answered with the instant
// query M{S} against --prometheus-url: one value per returned series.
//
// Built on sigs.k8s.io/custom-metrics-apiserver (the library the adapters of the ecosystem use),
// because the usual Prometheus adapter is not available from the Go module proxy.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/external_metrics"

	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

type promProvider struct {
	url     string
	metrics []provider.ExternalMetricInfo
	client  *http.Client
}

type promAnswer struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		Result []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]interface{}    `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

func (p *promProvider) GetExternalMetric(ctx context.Context, namespace string, selector labels.Selector,
	info provider.ExternalMetricInfo) (*external_metrics.ExternalMetricValueList, error) {
	var matchers []string
	if reqs, ok := selector.Requirements(); ok {
		for _, r := range reqs {
			values := r.Values().List()
			if len(values) != 1 {
				return nil, fmt.Errorf("only key=value selectors are supported, got %s", r.String())
			}
			matchers = append(matchers, fmt.Sprintf("%s=%q", r.Key(), values[0]))
		}
	}
	q := info.Metric + "{" + strings.Join(matchers, ",") + "}"
	resp, err := p.client.Get(p.url + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a promAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return nil, err
	}
	if a.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s", a.Error)
	}
	out := &external_metrics.ExternalMetricValueList{}
	for _, r := range a.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, external_metrics.ExternalMetricValue{
			MetricName:   info.Metric,
			MetricLabels: r.Metric,
			Timestamp:    metav1.Now(),
			Value:        *resource.NewMilliQuantity(int64(v*1000), resource.DecimalSI),
		})
	}
	return out, nil
}

func (p *promProvider) ListAllExternalMetrics() []provider.ExternalMetricInfo { return p.metrics }

type adapter struct {
	basecmd.AdapterBase
	prometheusURL string
	metricNames   string
}

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()
	a := &adapter{}
	a.Name = "headroom-test-external-metrics"
	a.Flags().StringVar(&a.prometheusURL, "prometheus-url", "http://127.0.0.1:9090", "Prometheus base URL")
	a.Flags().StringVar(&a.metricNames, "metrics", "", "comma-separated external metric names served")
	logs.AddFlags(a.Flags())
	if err := a.Flags().Parse(os.Args); err != nil {
		klog.Fatalf("flags: %v", err)
	}
	p := &promProvider{url: strings.TrimRight(a.prometheusURL, "/"), client: &http.Client{Timeout: 5 * time.Second}}
	for _, m := range strings.Split(a.metricNames, ",") {
		if m != "" {
			p.metrics = append(p.metrics, provider.ExternalMetricInfo{Metric: m})
		}
	}
	a.WithExternalMetrics(p)
	if err := a.Run(context.Background()); err != nil {
		klog.Fatalf("run: %v", err)
	}
}
