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
	"os/signal"
	"syscall"

	"github.com/actions/scaleset"
	"github.com/actions/scaleset/listener"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL: url, PersonalAccessToken: token,
	})
	if err != nil {
		return err
	}
	group, err := c.GetRunnerGroupByName(ctx, scaleset.DefaultRunnerGroup)
	if err != nil {
		return fmt.Errorf("runner group: %w", err)
	}
	set, err := c.GetRunnerScaleSet(ctx, group.ID, name)
	if err != nil || set == nil {
		set, err = c.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: name, RunnerGroupID: group.ID,
			Labels: []scaleset.Label{{Name: name}}})
		if err != nil {
			return fmt.Errorf("create scale set: %w", err)
		}
	}
	host, _ := os.Hostname()
	session, err := c.MessageSessionClient(ctx, set.ID, host+"-"+name)
	if err != nil {
		return fmt.Errorf("session: %w", err)
	}
	defer session.Close(context.Background())
	l, err := listener.New(session, listener.Config{ScaleSetID: set.ID, MaxRunners: maxRunners})
	if err != nil {
		return err
	}
	if err := l.Run(ctx, scaler{}); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
