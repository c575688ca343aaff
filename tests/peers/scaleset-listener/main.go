// One listener per scale set, as ARC deploys it: the `listener` package of github.com/actions/scaleset
// (the library ARC's listener uses) holding one scale set's message session, with a scaler that
// accepts the desired count and makes no runners. The side-by-side benchmark
// (bench/many_scale_sets_bench.cpp) runs one of these per scale set against the Actions Service
// peer and sums their RSS and CPU, beside one headroom serving all the scale sets.
//
//	scaleset-listener --url http://127.0.0.1:PORT/org --token PAT --name NAME [--max-runners 10]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/actions/scaleset"

	"headroom.test/scaleset-listener/internal/listen"
)

type scaler struct{}

func (scaler) HandleJobStarted(context.Context, *scaleset.JobStarted) error     { return nil }
func (scaler) HandleJobCompleted(context.Context, *scaleset.JobCompleted) error { return nil }
func (scaler) HandleDesiredRunnerCount(_ context.Context, count int) (int, error) {
	return count, nil
}

func main() {
	url := flag.String("url", "", "the GitHub configuration URL")
	token := flag.String("token", "", "a personal access token")
	name := flag.String("name", "", "the scale set's name")
	maxRunners := flag.Int("max-runners", 10, "maxRunners")
	flag.Parse()
	if err := run(*url, *token, *name, *maxRunners); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(url, token, name string, maxRunners int) error {
	return listen.Run(url, token, name, []scaleset.Label{{Name: name}}, maxRunners, scaler{}, nil)
}
