package search

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// ErrBlockedAddress is matched (errors.Is) by every *BlockedAddressError.
var ErrBlockedAddress = errors.New("address not allowed")

// BlockedAddressError is the SSRF guard refusing to connect to an address.
type BlockedAddressError struct {
	Addr   netip.Addr
	Reason string // "loopback", "private", "link-local (cloud metadata)", ...
}

func (e *BlockedAddressError) Error() string {
	return fmt.Sprintf("refusing to read a page at %s: %s address (set search.fetch.allow_networks or allow_private to permit)", e.Addr, e.Reason)
}

// Is makes errors.Is(err, ErrBlockedAddress) true.
func (e *BlockedAddressError) Is(target error) bool { return target == ErrBlockedAddress }

// Guard decides which addresses pages may be read from. The zero value
// blocks every non-public address.
//
// It is checked in the dialer's Control function, on the address actually
// being connected after DNS resolution, so neither a name that resolves to a
// private address nor DNS rebinding between a check and the connection gets
// through, and every redirect's connection is checked the same way.
type Guard struct {
	AllowAll bool           // the guard is off
	Allow    []netip.Prefix // networks let through although non-public
}

// blockedNets are the non-public networks, most specific first.
var blockedNets = []struct {
	p      netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata"},
	{netip.MustParsePrefix("169.254.170.2/32"), "cloud metadata"},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (deprecated)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "private (local-use NAT64)"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("fc00::/7"), "private"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	sixToF4 = netip.MustParsePrefix("2002::/16")
)

// Check returns a *BlockedAddressError when pages may not be read from a.
func (g *Guard) Check(a netip.Addr) error {
	if g != nil && g.AllowAll {
		return nil
	}
	a = a.Unmap().WithZone("")
	if g != nil {
		for _, p := range g.Allow {
			if p.Contains(a) {
				return nil
			}
		}
	}
	if reason := blockedReason(a); reason != "" {
		return &BlockedAddressError{Addr: a, Reason: reason}
	}
	return nil
}

func blockedReason(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	// IPv6 forms that embed an IPv4 address are judged by that address.
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			if r := blockedReason(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})); r != "" {
				return r + " (via NAT64)"
			}
		case sixToF4.Contains(a):
			if r := blockedReason(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})); r != "" {
				return r + " (via 6to4)"
			}
		}
	}
	for _, n := range blockedNets {
		if n.p.Contains(a) {
			return n.reason
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return "non-public"
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return "broadcast"
	}
	return ""
}

// Control is a net.Dialer Control function that refuses blocked addresses
// before the connection is made.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("guard: unexpected address %q: %w", address, err)
	}
	return g.Check(ap.Addr())
}
