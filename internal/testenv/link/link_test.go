package link

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echo serves lines back, upper-cased.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				r := bufio.NewReader(c)
				for {
					s, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, strings.ToUpper(s)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func newLink(t *testing.T) *Link {
	t.Helper()
	l, err := New(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

type conn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, l *Link) conn {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return conn{c, bufio.NewReader(c)}
}

// say sends a line and returns the answer, or an error after wait.
func (c conn) say(s string, wait time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, s+"\n"); err != nil {
		return "", err
	}
	got, err := c.r.ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

// A partition holds what is sent, tells nobody, and delivers it all, in order,
// once the link heals; a connection made during the partition waits for it.
func TestCutHoldsUntilHeal(t *testing.T) {
	l := newLink(t)
	c := dial(t, l)
	if got, err := c.say("a", time.Second); err != nil || got != "A" {
		t.Fatalf("before the cut: %q, %v", got, err)
	}
	l.Cut()
	if got, err := c.say("b", 200*time.Millisecond); err == nil {
		t.Fatalf("a cut link answered %q", got)
	}
	late := make(chan string, 1)
	go func() {
		d := dial(t, l)
		got, _ := d.say("c", 5*time.Second)
		late <- got
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case got := <-late:
		t.Fatalf("a connection made during the cut was answered %q", got)
	default:
	}
	l.Heal()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if got, err := c.r.ReadString('\n'); err != nil || got != "B\n" {
		t.Fatalf("the held line after the heal: %q, %v", got, err)
	}
	if got, err := c.say("d", time.Second); err != nil || got != "D" {
		t.Fatalf("after the heal: %q, %v", got, err)
	}
	if got := <-late; got != "C" {
		t.Fatalf("the connection made during the cut, after the heal: %q", got)
	}
	if s := l.Stats(); s.Held == 0 || s.Connections != 2 {
		t.Fatalf("stats %+v: want held chunks and 2 connections", s)
	}
}

// A reset drops every connection at once; new ones work.
func TestResetDropsConnections(t *testing.T) {
	l := newLink(t)
	c := dial(t, l)
	if got, err := c.say("a", time.Second); err != nil || got != "A" {
		t.Fatalf("before the reset: %q, %v", got, err)
	}
	l.Reset()
	if got, err := c.say("b", time.Second); err == nil {
		t.Fatalf("a reset connection answered %q", got)
	}
	if got, err := dial(t, l).say("c", time.Second); err != nil || got != "C" {
		t.Fatalf("a new connection after the reset: %q, %v", got, err)
	}
}

// A lossy link delays the lost segments by the stall and keeps the order.
func TestLossyDelaysAndKeepsOrder(t *testing.T) {
	l := newLink(t)
	c := dial(t, l)
	l.Lossy(0.5, 50*time.Millisecond, 7)
	start := time.Now()
	for i, s := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		got, err := c.say(s, 2*time.Second)
		if err != nil || got != strings.ToUpper(s) {
			t.Fatalf("line %d: %q, %v", i, got, err)
		}
	}
	lost := l.Stats().Lost
	if lost == 0 {
		t.Fatal("no segment was lost at p=0.5 over 16 chunks")
	}
	if took := time.Since(start); took < time.Duration(lost)*50*time.Millisecond {
		t.Fatalf("%d lost segments took only %s: the stall was not applied", lost, took)
	}
	l.Lossy(0, 0, 0)
	before := l.Stats().Lost
	if _, err := c.say("z", time.Second); err != nil || l.Stats().Lost != before {
		t.Fatalf("after p=0: %v, lost %d → %d", err, before, l.Stats().Lost)
	}
}

// A dropped link refuses new connections until it heals.
func TestDropRefusesUntilHeal(t *testing.T) {
	l := newLink(t)
	c := dial(t, l)
	if got, err := c.say("a", time.Second); err != nil || got != "A" {
		t.Fatalf("before the drop: %q, %v", got, err)
	}
	l.Drop()
	if got, err := c.say("b", time.Second); err == nil {
		t.Fatalf("a dropped connection answered %q", got)
	}
	if got, err := dial(t, l).say("c", time.Second); err == nil {
		t.Fatalf("a new connection while dropped answered %q", got)
	}
	l.Heal()
	if got, err := dial(t, l).say("d", time.Second); err != nil || got != "D" {
		t.Fatalf("after the heal: %q, %v", got, err)
	}
}
