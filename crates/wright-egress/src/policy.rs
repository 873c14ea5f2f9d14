//! The egress policy: which hosts and addresses a request may reach, and why.
//!
//! Pure functions over already-parsed URLs and already-resolved addresses; no IO. The rules:
//!
//! - only `http` and `https`;
//! - names that are loopback by definition (`localhost`, `*.localhost`) or cloud metadata
//!   endpoints (`metadata.google.internal`, …) are denied before any lookup;
//! - every address must be globally routable: the special-purpose ranges of the IANA IPv4 and
//!   IPv6 registries are denied (loopback, unspecified, private, link-local, CGNAT, benchmarking,
//!   documentation, reserved, multicast, broadcast, ULA, site-local, …), cloud metadata
//!   addresses by name of the cloud, and IPv6 forms that embed an IPv4 address (mapped,
//!   compatible, translated, NAT64, 6to4, Teredo) are judged by the IPv4 address they carry;
//!   everything outside 2000::/3 (the only IPv6 space allocated for global unicast) is reserved;
//! - the operator's allowlist (hosts, `*.suffix` wildcards, IPs and CIDRs, each optionally
//!   bound to one port) wins over all of the above.
//!
//! **Invariant:** a request is allowed only if the host is allowlisted or *every* address it
//! resolved to is allowed; one bad address denies the whole request, because the connector may
//! pick any of them.

use std::borrow::Cow;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::Serialize;

use crate::EgressError;

/// One IPv4 special-purpose range and what it is.
struct Range4 {
    net: Ipv4Net,
    name: &'static str,
}

/// One IPv6 special-purpose range and what it is.
struct Range6 {
    net: Ipv6Net,
    name: &'static str,
}

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8, name: &'static str) -> Range4 {
    Range4 { net: Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix), name }
}

const fn v6(segments: [u16; 8], prefix: u16, name: &'static str) -> Range6 {
    let [a, b, c, d, e, f, g, h] = segments;
    Range6 { net: Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), prefix as u8), name }
}

/// IPv4 ranges that are not globally routable, most specific first so that the rule shown to
/// the user is the telling one ("cloud metadata", not "link-local"). Sources: the IANA IPv4
/// Special-Purpose Address Registry (RFC 6890 and updates) and the metadata endpoints that
/// cloud providers document.
const DENIED_V4: &[Range4] = &[
    v4(169, 254, 169, 254, 32, "cloud metadata (AWS, GCP, Azure, DigitalOcean, OpenStack)"),
    v4(169, 254, 170, 2, 32, "cloud metadata (AWS ECS task credentials)"),
    v4(100, 100, 100, 200, 32, "cloud metadata (Alibaba Cloud)"),
    v4(192, 0, 0, 192, 32, "cloud metadata (Oracle Cloud)"),
    v4(255, 255, 255, 255, 32, "broadcast"),
    v4(0, 0, 0, 0, 8, "unspecified (\"this network\")"),
    v4(10, 0, 0, 0, 8, "private"),
    v4(100, 64, 0, 0, 10, "shared address space (CGNAT)"),
    v4(127, 0, 0, 0, 8, "loopback"),
    v4(169, 254, 0, 0, 16, "link-local"),
    v4(172, 16, 0, 0, 12, "private"),
    v4(192, 0, 0, 0, 24, "IETF protocol assignments"),
    v4(192, 0, 2, 0, 24, "documentation (TEST-NET-1)"),
    v4(192, 88, 99, 0, 24, "6to4 relay anycast (deprecated)"),
    v4(192, 168, 0, 0, 16, "private"),
    v4(198, 18, 0, 0, 15, "benchmarking"),
    v4(198, 51, 100, 0, 24, "documentation (TEST-NET-2)"),
    v4(203, 0, 113, 0, 24, "documentation (TEST-NET-3)"),
    v4(224, 0, 0, 0, 4, "multicast"),
    v4(240, 0, 0, 0, 4, "reserved"),
];

/// IPv6 ranges checked before the embedded-IPv4 forms.
const DENIED_V6_FIRST: &[Range6] = &[
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128, "unspecified"),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback"),
    v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], 128, "cloud metadata (AWS, IPv6)"),
];

/// IPv6 ranges that are not globally routable (IANA IPv6 Special-Purpose Address Registry),
/// checked after the embedded-IPv4 forms.
const DENIED_V6: &[Range6] = &[
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "local-use NAT64"),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only"),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "documentation"),
    // Benchmarking 2001:2::/48, ORCHID 2001:10::/28, ORCHIDv2 2001:20::/28 and the rest of the
    // IETF block; Teredo (2001::/32) is handled before this, by its embedded addresses.
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, "IETF protocol assignments"),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "documentation"),
    v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, "segment routing (SRv6) SIDs"),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique local (ULA)"),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local"),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local (deprecated)"),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast"),
];

/// The only IPv6 space IANA has allocated for global unicast.
const GLOBAL_UNICAST_V6: Ipv6Net = Ipv6Net::new_assert(Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3);

/// Host names denied before any lookup: cloud metadata services reachable by name. (Their
/// addresses are denied too; the names are here so the verdict is right even when the name
/// would resolve through a search domain or a hosts file to something unexpected.)
const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.tencentyun.com",
    "metadata.platformequinix.com",
];

/// What the policy says about one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub allowed: bool,
    pub rule: Cow<'static, str>,
}

impl Classification {
    fn allow(rule: impl Into<Cow<'static, str>>) -> Self {
        Classification { allowed: true, rule: rule.into() }
    }
    fn deny(rule: impl Into<Cow<'static, str>>) -> Self {
        Classification { allowed: false, rule: rule.into() }
    }
}

const GLOBAL: &str = "globally routable";

/// Classifies one address by the built-in rules alone (no allowlist).
pub fn classify(address: IpAddr) -> Classification {
    match address {
        IpAddr::V4(address) => classify_v4(address),
        IpAddr::V6(address) => classify_v6(address),
    }
}

fn classify_v4(address: Ipv4Addr) -> Classification {
    for range in DENIED_V4 {
        if range.net.contains(&address) {
            return Classification::deny(format!("{} ({})", range.name, range.net));
        }
    }
    Classification::allow(GLOBAL)
}

/// The IPv6 forms that carry an IPv4 address, and where it sits.
enum Embedded {
    /// `::ffff:a.b.c.d` — the socket layer turns it into an IPv4 connection.
    Mapped(Ipv4Addr),
    /// `::a.b.c.d` (deprecated, RFC 4291).
    Compatible(Ipv4Addr),
    /// `::ffff:0:a.b.c.d` (SIIT, RFC 2765).
    Translated(Ipv4Addr),
    /// `64:ff9b::a.b.c.d` — a NAT64 gateway forwards it to the IPv4 address.
    Nat64(Ipv4Addr),
    /// `2002:AABB:CCDD::/48` — 6to4 tunnels to the IPv4 address.
    SixToFour(Ipv4Addr),
    /// `2001:0:SSSS:SSSS:…:CCCC:CCCC` — Teredo server and (inverted) client addresses.
    Teredo { server: Ipv4Addr, client: Ipv4Addr },
}

fn last_32(segments: &[u16; 8]) -> Ipv4Addr {
    Ipv4Addr::from(((segments[6] as u32) << 16) | segments[7] as u32)
}

fn embedded(address: Ipv6Addr) -> Option<Embedded> {
    let s = address.segments();
    let tail = last_32(&s);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(Embedded::Mapped(tail)),
        [0, 0, 0, 0, 0, 0, _, _] => Some(Embedded::Compatible(tail)),
        [0, 0, 0, 0, 0xffff, 0, _, _] => Some(Embedded::Translated(tail)),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(Embedded::Nat64(tail)),
        [0x2002, high, low, ..] => Some(Embedded::SixToFour(Ipv4Addr::from(((high as u32) << 16) | low as u32))),
        [0x2001, 0, high, low, ..] => Some(Embedded::Teredo {
            server: Ipv4Addr::from(((high as u32) << 16) | low as u32),
            client: Ipv4Addr::from(!u32::from(tail)),
        }),
        _ => None,
    }
}

fn classify_v6(address: Ipv6Addr) -> Classification {
    for range in DENIED_V6_FIRST {
        if range.net.contains(&address) {
            return Classification::deny(format!("{} ({})", range.name, range.net));
        }
    }
    if let Some(form) = embedded(address) {
        // Judge the IPv4 address the packet would end up at; a form is only as good as the
        // address it carries.
        let (form_name, prefix, carried, routable) = match form {
            Embedded::Mapped(ip) => ("IPv4-mapped", "::ffff:0:0/96", vec![ip], true),
            Embedded::Compatible(ip) => ("IPv4-compatible", "::/96", vec![ip], false),
            Embedded::Translated(ip) => ("IPv4-translated", "::ffff:0:0:0/96", vec![ip], false),
            Embedded::Nat64(ip) => ("NAT64", "64:ff9b::/96", vec![ip], true),
            Embedded::SixToFour(ip) => ("6to4", "2002::/16", vec![ip], true),
            Embedded::Teredo { server, client } => ("Teredo", "2001::/32", vec![server, client], true),
        };
        for ip in carried {
            let inner = classify_v4(ip);
            if !inner.allowed {
                return Classification::deny(format!("{form_name} ({prefix}) form of {ip}, which is {}", inner.rule));
            }
        }
        return if routable {
            Classification::allow(GLOBAL)
        } else {
            Classification::deny(format!("{form_name} ({prefix}, deprecated)"))
        };
    }
    for range in DENIED_V6 {
        if range.net.contains(&address) {
            return Classification::deny(format!("{} ({})", range.name, range.net));
        }
    }
    if !GLOBAL_UNICAST_V6.contains(&address) {
        return Classification::deny("reserved (outside 2000::/3 global unicast)");
    }
    Classification::allow(GLOBAL)
}

/// Lower-cases and drops trailing dots, so `LOCALHOST.` and `localhost` compare equal. (The
/// URL parser already lower-cases and applies IDNA; the trailing dot is the one spelling it
/// keeps that names the same host.)
pub(crate) fn normalize_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// A rule that denies a host by its name alone, before any lookup.
pub(crate) fn name_rule(normalized_host: &str) -> Option<String> {
    if normalized_host == "localhost" || normalized_host.ends_with(".localhost") {
        return Some("loopback name (localhost, RFC 6761)".to_owned());
    }
    if METADATA_NAMES.contains(&normalized_host) {
        return Some(format!("cloud metadata name ({normalized_host})"));
    }
    None
}

/// What an allowlist entry matches.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowTarget {
    /// An exact host name (normalized).
    Host(String),
    /// `*.example.lan`: any subdomain of the suffix (not the suffix itself).
    Suffix(String),
    /// An address or a CIDR block.
    Net(IpNet),
}

/// One operator allowlist entry: `nas.lan`, `*.lan`, `192.168.1.0/24`, `127.0.0.1:8080`,
/// `[::1]:3000`, `[fd00::/8]:443`, `10.0.0.0/8:8443`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowEntry {
    target: AllowTarget,
    port: Option<u16>,
    text: String,
}

impl AllowEntry {
    fn port_matches(&self, port: u16) -> bool {
        self.port.is_none_or(|allowed| allowed == port)
    }

    fn matches_host(&self, normalized_host: &str, port: u16) -> bool {
        self.port_matches(port)
            && match &self.target {
                AllowTarget::Host(host) => host == normalized_host,
                AllowTarget::Suffix(suffix) => normalized_host
                    .strip_suffix(suffix.as_str())
                    .is_some_and(|head| head.ends_with('.') && head.len() > 1),
                AllowTarget::Net(_) => false,
            }
    }

    fn matches_address(&self, address: IpAddr, port: u16) -> bool {
        self.port_matches(port)
            && match &self.target {
                AllowTarget::Net(net) => net.contains(&address),
                _ => false,
            }
    }
}

impl fmt::Display for AllowEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for AllowEntry {
    type Err = EgressError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: &str| EgressError::Config { reason: format!("allowlist entry {text:?}: {reason}") };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(invalid("empty"));
        }
        let parse_port = |port: &str| port.parse::<u16>().map_err(|_| invalid("bad port"));
        // Split off an optional port. Brackets delimit IPv6 (and IPv6 CIDRs); otherwise a
        // single colon separates the port, and more than one means a bare IPv6 address.
        let (target, port) = if let Some(rest) = trimmed.strip_prefix('[') {
            let (inside, after) = rest.split_once(']').ok_or_else(|| invalid("missing ]"))?;
            let port = match after {
                "" => None,
                _ => Some(parse_port(after.strip_prefix(':').ok_or_else(|| invalid("junk after ]"))?)?),
            };
            (inside, port)
        } else if trimmed.matches(':').count() == 1 {
            let (target, port) = trimmed.split_once(':').unwrap_or((trimmed, ""));
            (target, Some(parse_port(port)?))
        } else {
            (trimmed, None)
        };
        let target = if let Ok(net) = target.parse::<IpNet>() {
            AllowTarget::Net(net.trunc())
        } else if let Ok(address) = target.parse::<IpAddr>() {
            AllowTarget::Net(IpNet::from(address))
        } else if let Some(suffix) = target.strip_prefix("*.") {
            let suffix = normalize_host(suffix);
            if suffix.is_empty() || suffix.contains('*') {
                return Err(invalid("bad wildcard"));
            }
            AllowTarget::Suffix(suffix)
        } else {
            let host = normalize_host(target);
            let valid =
                !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_');
            if !valid {
                return Err(invalid("not a host name, IP address or CIDR (IDN hosts: use the xn-- form)"));
            }
            AllowTarget::Host(host)
        };
        Ok(AllowEntry { target, port, text: trimmed.to_owned() })
    }
}

/// The verdict on one resolved address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AddressVerdict {
    pub address: IpAddr,
    pub allowed: bool,
    /// The rule that decided: `globally routable`, `loopback (127.0.0.0/8)`,
    /// `allowlist 127.0.0.1:8080`, …
    pub rule: String,
}

/// The policy's answer for one URL: allowed or not, the addresses it resolved to, and the rule
/// that decided. `wright egress check URL` prints its `Display`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub allowed: bool,
    /// The URL as the client would see it (normalized by the parser), or the input when it
    /// did not parse.
    pub url: String,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub addresses: Vec<AddressVerdict>,
    /// The rule that decided, in words.
    pub rule: String,
}

impl Verdict {
    pub(crate) fn refused(url: &str, host: Option<String>, port: Option<u16>, rule: String) -> Self {
        Verdict { allowed: false, url: url.to_owned(), host, port, addresses: Vec::new(), rule }
    }

    /// One line for an error message: the URL and the rule that decided (for an address
    /// rule, the address it applied to).
    pub fn reason(&self) -> String {
        format!("{}: {}", self.url, self.rule)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let decision = if self.allowed { "allow" } else { "deny" };
        write!(f, "{decision} {}: {}", self.url, self.rule)?;
        for address in &self.addresses {
            let mark = if address.allowed { "allow" } else { "deny" };
            write!(f, "\n  {mark} {}: {}", address.address, address.rule)?;
        }
        Ok(())
    }
}

/// The policy with the operator's allowlist.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    allow: Vec<AllowEntry>,
}

impl Policy {
    pub(crate) fn new(allow: &[String]) -> Result<Self, EgressError> {
        let allow = allow.iter().map(|entry| entry.parse()).collect::<Result<_, _>>()?;
        Ok(Policy { allow })
    }

    /// The allowlist entry that admits this host by name, if any.
    pub(crate) fn allowlisted_host(&self, normalized_host: &str, port: u16) -> Option<&AllowEntry> {
        self.allow.iter().find(|entry| entry.matches_host(normalized_host, port))
    }

    /// Judges one address the request would connect to.
    pub(crate) fn judge(&self, address: IpAddr, port: u16) -> AddressVerdict {
        if let Some(entry) = self.allow.iter().find(|entry| entry.matches_address(address, port)) {
            return AddressVerdict { address, allowed: true, rule: format!("allowlist {entry}") };
        }
        let classification = classify(address);
        AddressVerdict { address, allowed: classification.allowed, rule: classification.rule.into_owned() }
    }

    /// Judges all addresses; the request is allowed only if every one is.
    pub(crate) fn judge_all(&self, addresses: &[IpAddr], port: u16) -> (bool, Vec<AddressVerdict>, String) {
        let verdicts: Vec<AddressVerdict> = addresses.iter().map(|&address| self.judge(address, port)).collect();
        let allowed = !verdicts.is_empty() && verdicts.iter().all(|verdict| verdict.allowed);
        let rule = if allowed {
            let mut rules: Vec<&str> = Vec::new();
            for verdict in &verdicts {
                if !rules.contains(&verdict.rule.as_str()) {
                    rules.push(&verdict.rule);
                }
            }
            rules.join("; ")
        } else {
            match verdicts.iter().find(|verdict| !verdict.allowed) {
                Some(denied) => format!("{} is {}", denied.address, denied.rule),
                None => "no addresses".to_owned(),
            }
        };
        (allowed, verdicts, rule)
    }
}
