// The client-go side of headroom's decode benchmark: decodes the same bytes headroom's benchmark
// wrote (a 10k-pod list and a 10k-event watch stream) the way client-go does — the scheme's
// universal deserializer into typed v1.Pod objects — and measures the heap a client-go informer
// store (cache.Store keyed namespace/name) holds for them, without indexes and with the three
// indexes headroom's informer keeps (namespace, "key=value" label, owner uid).
//
//	go run . -list pods-10k.json -watch watch-10k.jsonl
//
// Prints one JSON object with list_mb_s, watch_mb_s, bytes_per_pod and bytes_per_pod_indexed.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	listPath := flag.String("list", "", "pod list JSON")
	watchPath := flag.String("watch", "", "watch stream, one event per line")
	rounds := flag.Int("rounds", 5, "decode rounds (the median is reported)")
	flag.Parse()
	list, err := os.ReadFile(*listPath)
	must(err)
	stream, err := os.ReadFile(*watchPath)
	must(err)
	decoder := scheme.Codecs.UniversalDeserializer()

	median := func(xs []float64) float64 {
		for i := range xs {
			for j := i + 1; j < len(xs); j++ {
				if xs[j] < xs[i] {
					xs[i], xs[j] = xs[j], xs[i]
				}
			}
		}
		return xs[len(xs)/2]
	}

	var listRates []float64
	for r := 0; r < *rounds; r++ {
		start := time.Now()
		obj, _, err := decoder.Decode(list, nil, nil)
		must(err)
		if n := len(obj.(*corev1.PodList).Items); n != 10000 {
			must(fmt.Errorf("decoded %d pods", n))
		}
		listRates = append(listRates, float64(len(list))/time.Since(start).Seconds()/1e6)
	}

	var watchRates []float64
	for r := 0; r < *rounds; r++ {
		start := time.Now()
		sc := bufio.NewScanner(bytes.NewReader(stream))
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		n := 0
		for sc.Scan() {
			var ev metav1.WatchEvent
			must(json.Unmarshal(sc.Bytes(), &ev))
			_, _, err := decoder.Decode(ev.Object.Raw, nil, nil)
			must(err)
			n++
		}
		if n != 10000 {
			must(fmt.Errorf("decoded %d events", n))
		}
		watchRates = append(watchRates, float64(len(stream))/time.Since(start).Seconds()/1e6)
	}

	// Heap held by an informer's store of the decoded pods.
	obj, _, err := decoder.Decode(list, nil, nil)
	must(err)
	items := obj.(*corev1.PodList).Items
	pods := make([][]byte, len(items))
	for i := range items {
		pods[i], err = json.Marshal(&items[i])
		must(err)
	}
	obj, items = nil, nil

	// What a store holds is what the heap loses when it is dropped: measured that way, garbage left
	// over from earlier work cannot count for or against it.
	held := func(makeStore func() cache.Store) float64 {
		store := makeStore()
		for _, raw := range pods {
			o, _, err := decoder.Decode(raw, nil, nil)
			must(err)
			must(store.Add(o))
		}
		var full, empty runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&full)
		runtime.KeepAlive(store)
		store = nil
		runtime.GC()
		runtime.ReadMemStats(&empty)
		return float64(full.HeapAlloc-empty.HeapAlloc) / float64(len(pods))
	}
	// Each is measured three times, interleaved, and the smallest reported: the figure most
	// favourable to client-go.
	indexed := func() cache.Store {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
			cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
			"label": func(obj interface{}) ([]string, error) {
				var out []string
				for k, v := range obj.(*corev1.Pod).Labels {
					out = append(out, k+"="+v)
				}
				return out, nil
			},
			"owner": func(obj interface{}) ([]string, error) {
				var out []string
				for _, o := range obj.(*corev1.Pod).OwnerReferences {
					out = append(out, string(o.UID))
				}
				return out, nil
			},
		})
	}
	perPod, perPodIndexed := math.Inf(1), math.Inf(1)
	for i := 0; i < 3; i++ {
		perPod = math.Min(perPod, held(func() cache.Store { return cache.NewStore(cache.MetaNamespaceKeyFunc) }))
		perPodIndexed = math.Min(perPodIndexed, held(indexed))
	}

	out, _ := json.Marshal(map[string]float64{
		"list_mb_s":             median(listRates),
		"watch_mb_s":            median(watchRates),
		"bytes_per_pod":         perPod,
		"bytes_per_pod_indexed": perPodIndexed,
	})
	fmt.Println(string(out))
}
