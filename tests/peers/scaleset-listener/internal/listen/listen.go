// Package listen holds one scale set's message session as ARC's listener does, for this module's
// two listeners (the bare one of the memory comparison and ARC's with its EphemeralRunnerSet
// scaler): the scale set found in the default runner group or created with `labels`, a session,
// and the `listener` package of github.com/actions/scaleset running `scaler` until SIGINT/SIGTERM.
package listen

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/actions/scaleset"
	"github.com/actions/scaleset/listener"
)

// Run holds the session until a signal; `found` is told the scale set's id once it is known.
func Run(url, token, name string, labels []scaleset.Label, maxRunners int, scaler listener.Scaler, found func(id int)) error {
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
		set, err = c.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{Name: name, RunnerGroupID: group.ID, Labels: labels})
		if err != nil {
			return fmt.Errorf("create scale set: %w", err)
		}
	}
	if found != nil {
		found(set.ID)
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
	if err := l.Run(ctx, scaler); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
