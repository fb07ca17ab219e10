package egress

import (
	"errors"
	"net/netip"
	"testing"
)

func TestPolicyRefusesEveryNonPublicAddress(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.255.255.254", "0.0.0.0", "0.1.2.3",
		"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "169.254.170.2", "169.254.0.1", "100.100.100.200", "192.0.0.192",
		"100.64.0.1", "100.127.255.255", "192.0.0.8", "192.0.2.1", "198.51.100.7", "203.0.113.9",
		"198.18.0.1", "198.19.255.255", "192.88.99.1", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::1", "::", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "::a00:1",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "2002:7f00:1::", "2002:a9fe:a9fe::1",
		"fc00::1", "fd00:ec2::254", "fd12:3456::1", "fe80::1", "fec0::1", "ff02::1", "ff0e::1",
		"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:10::1", "2001:db8::1", "3fff::1",
		"100::1", "1::1", "4000::1", "::ffff:0.0.0.0",
	}
	p := Policy{}
	for _, s := range refused {
		a := netip.MustParseAddr(s)
		err := p.Check(a)
		var be *BlockedError
		if !errors.Is(err, ErrBlocked) || !errors.As(err, &be) || be.Reason == "" {
			t.Errorf("Check(%s) = %v, want a refusal with a reason", s, err)
		}
	}
	if err := p.Check(netip.MustParseAddr("fe80::1%eth0")); !errors.Is(err, ErrBlocked) {
		t.Errorf("zoned address: %v", err)
	}
	if err := p.Check(netip.Addr{}); !errors.Is(err, ErrBlocked) {
		t.Errorf("invalid address: %v", err)
	}
}

func TestPolicyAllowsPublicAddresses(t *testing.T) {
	allowed := []string{"93.184.216.34", "8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "192.0.1.1", "223.255.255.254",
		"2606:4700:4700::1111", "2a00:1450:4001:81c::200e", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"}
	for _, s := range allowed {
		if err := (Policy{}).Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("Check(%s) = %v, want allowed", s, err)
		}
	}
}

func TestAllowLoopbackOpensLoopbackOnly(t *testing.T) {
	dev := Policy{AllowLoopback: true}
	for _, s := range []string{"127.0.0.1", "127.3.2.1", "::1", "::ffff:127.0.0.1"} {
		if err := dev.Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("dev Check(%s) = %v", s, err)
		}
	}
	for _, s := range []string{"10.0.0.1", "169.254.169.254", "192.168.0.1", "fd00:ec2::254", "fe80::1", "0.0.0.0", "::"} {
		if err := dev.Check(netip.MustParseAddr(s)); err == nil {
			t.Errorf("dev Check(%s) allowed: only loopback may open", s)
		}
	}
}

func TestUnwrap(t *testing.T) {
	cases := map[string]string{
		"::ffff:1.2.3.4":   "1.2.3.4",
		"64:ff9b::102:304": "1.2.3.4",
		"2002:102:304::9":  "1.2.3.4",
		"::102:304":        "1.2.3.4",
		"::1":              "::1",
		"2606:4700::1":     "2606:4700::1",
		"1.2.3.4":          "1.2.3.4",
	}
	for in, want := range cases {
		if got := Unwrap(netip.MustParseAddr(in)); got.String() != want {
			t.Errorf("Unwrap(%s) = %s, want %s", in, got, want)
		}
	}
}
