package main

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// apiEvent is one watch event as a client of the API server sees it, with the
// time this process received it.
type apiEvent struct {
	Type watch.EventType
	Win  *twv1.BrowserWindow
	Sess *twv1.BrowserSession
	Act  *twv1.BrowserAction
	At   time.Time
}

// watchAPI streams BrowserWindow, BrowserSession and BrowserAction events of a namespace ("" =
// all) into h until ctx ends, re-establishing the watch when the server ends it.
// The channel it returns closes once all three watches are open at the API
// server: events of any write after that reach h.
func watchAPI(ctx context.Context, cw client.WithWatch, ns string, h *hub[apiEvent]) <-chan struct{} {
	lists := []client.ObjectList{&twv1.BrowserWindowList{}, &twv1.BrowserSessionList{}, &twv1.BrowserActionList{}}
	var open sync.WaitGroup
	open.Add(len(lists))
	for _, list := range lists {
		go func() {
			rv := ""
			first := true
			for ctx.Err() == nil {
				opts := []client.ListOption{&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}}}
				if ns != "" {
					opts = append(opts, client.InNamespace(ns))
				}
				w, err := cw.Watch(ctx, list, opts...)
				if err != nil {
					if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
						rv = ""
					}
					time.Sleep(100 * time.Millisecond)
					continue
				}
				if first {
					first = false
					open.Done()
				}
				for ev := range w.ResultChan() {
					at := time.Now()
					switch o := ev.Object.(type) {
					case *twv1.BrowserWindow:
						rv = o.ResourceVersion
						if ev.Type != watch.Bookmark {
							h.publish(apiEvent{Type: ev.Type, Win: o, At: at})
						}
					case *twv1.BrowserSession:
						rv = o.ResourceVersion
						if ev.Type != watch.Bookmark {
							h.publish(apiEvent{Type: ev.Type, Sess: o, At: at})
						}
					case *twv1.BrowserAction:
						rv = o.ResourceVersion
						if ev.Type != watch.Bookmark {
							h.publish(apiEvent{Type: ev.Type, Act: o, At: at})
						}
					case *metav1.Status:
						rv = ""
					}
				}
				w.Stop()
			}
		}()
	}
	ready := make(chan struct{})
	go func() { open.Wait(); close(ready) }()
	return ready
}
