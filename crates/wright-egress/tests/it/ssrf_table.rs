//! The SSRF URL table: payloads from public references, each run through the real parser,
//! resolver path (with injected DNS answers for the names, as the real services behind them
//! would answer) and policy via `Egress::check`.
//!
//! Sources, cited per row:
//! - [PATT] PayloadsAllTheThings, "Server Side Request Forgery" (README and "SSRF Cloud
//!   Instances"): <https://github.com/swisskyrepo/PayloadsAllTheThings/tree/master/Server%20Side%20Request%20Forgery>
//! - [OWASP] OWASP Cheat Sheet Series, "Server-Side Request Forgery Prevention Cheat Sheet":
//!   <https://cheatsheetseries.owasp.org/cheatsheets/Server_Side_Request_Forgery_Prevention_Cheat_Sheet.html>
//! - [PS] PortSwigger Web Security Academy, "Server-side request forgery (SSRF)" and its
//!   "URL validation bypass cheat sheet": <https://portswigger.net/web-security/ssrf>
//! - [ORANGE] Orange Tsai, "A New Era of SSRF — Exploiting URL Parser in Trending Programming
//!   Languages" (Black Hat USA 2017).
//! - [IANA4]/[IANA6] IANA IPv4 / IPv6 Special-Purpose Address Registries (RFC 6890 and
//!   updates), for the range rows.
//! - [CLOUD] provider metadata documentation (AWS IMDS incl. IPv6 and ECS, GCP, Azure,
//!   Alibaba, Oracle, Tencent), as collected in [PATT] "SSRF Cloud Instances".

use std::sync::Arc;

use wright_egress::{Egress, EgressConfig, StaticResolver};

use crate::ip;

/// One row: the URL, whether it must be allowed, and a piece of the rule that must decide.
struct Case {
    url: &'static str,
    allow: bool,
    rule: &'static str,
    source: &'static str,
}

const fn deny(url: &'static str, rule: &'static str, source: &'static str) -> Case {
    Case { url, allow: false, rule, source }
}

const fn allow(url: &'static str, rule: &'static str, source: &'static str) -> Case {
    Case { url, allow: true, rule, source }
}

const CASES: &[Case] = &[
    // Localhost and its spellings.
    deny("http://127.0.0.1:80", "loopback", "PATT localhost"),
    deny("http://127.0.0.1:443", "loopback", "PATT localhost"),
    deny("http://127.0.0.1:22", "loopback", "PATT localhost"),
    deny("http://127.1:80", "loopback", "PATT short form"),
    deny("http://127.000000000000000.1", "loopback", "PATT zero padding"),
    deny("http://0", "unspecified", "PATT 0"),
    deny("http://0.0.0.0:80", "unspecified", "PATT 0.0.0.0"),
    deny("http://localhost:80", "localhost", "PATT localhost"),
    deny("http://[::]:80/", "unspecified", "PATT IPv6 unspecified"),
    deny("http://[::]:25/", "unspecified", "PATT IPv6 SMTP"),
    deny("http://[::]:3128/", "unspecified", "PATT IPv6 Squid"),
    deny("http://[0000::1]:80/", "loopback", "PATT IPv6 loopback"),
    deny("http://[0:0:0:0:0:ffff:127.0.0.1]/thefile", "IPv4-mapped", "PATT IPv4-mapped"),
    deny("http://①②⑦.⓪.⓪.①", "loopback", "PATT enclosed alphanumerics"),
    deny("http://localtest.me", "loopback", "PATT DNS to localhost"),
    deny("http://customer1.app.localhost.my.company.127.nip.io", "loopback", "PATT nip.io"),
    deny("http://mail.ebc.apple.com", "loopback", "PATT name resolving to 127.0.0.6"),
    deny("http://bugbounty.dod.network", "loopback", "PATT name resolving to 127.0.0.2"),
    deny("http://spoofed.burpcollaborator.net", "loopback", "PATT/PS spoofed DNS"),
    deny("http://127.127.127.127", "loopback", "PATT 127/8"),
    deny("http://127.0.1.3", "loopback", "PATT 127/8"),
    deny("http://127.0.0.0", "loopback", "PATT 127/8"),
    deny("http://2130706433/", "loopback", "PATT decimal"),
    deny("http://3232235521/", "private", "PATT decimal 192.168.0.1"),
    deny("http://3232235777/", "private", "PATT decimal 192.168.1.1"),
    deny("http://0x7f000001/", "loopback", "PATT hex"),
    deny("http://0xc0a80014/", "private", "PATT hex 192.168.0.20"),
    deny("http://0177.0.0.1/", "loopback", "PATT octal"),
    deny("http://017700000001/", "loopback", "PS octal whole"),
    deny("http://0x7f.0x0.0x0.0x1/", "loopback", "PS hex dotted"),
    deny("http://0x7f.1/", "loopback", "PS hex short"),
    deny("http://o177.0.0.1/", "invalid URL", "PATT o-prefixed octal"),
    deny("http://0o177.0.0.1/", "invalid URL", "PATT 0o-prefixed octal"),
    deny("http://q177.0.0.1/", "invalid URL", "PATT q-prefixed octal"),
    deny("http://127.0.0.1.nip.io/", "loopback", "PATT nip.io"),
    deny("http://[::ffff:7f00:1]/", "IPv4-mapped", "PATT IPv4-mapped hex"),
    deny("http://[0:0:0:0:0:ffff:7f00:1]/", "IPv4-mapped", "PATT IPv4-mapped hex"),
    deny("http://[::127.0.0.1]/", "IPv4-compatible", "PS IPv4-compatible"),
    deny("http://[::1]/", "loopback", "OWASP IPv6 loopback"),
    deny("http://[0:0:0:0:0:0:0:1]/", "loopback", "OWASP IPv6 loopback long"),
    deny("http://%31%32%37.0.0.1/", "loopback", "PS percent-encoded host"),
    deny("http://loc%61lhost/", "localhost", "PS percent-encoded name"),
    deny("http://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", "localhost", "PATT enclosed alphanumerics"),
    deny("http://LOCALHOST/", "localhost", "PS case"),
    deny("http://localhost./", "localhost", "PS trailing dot"),
    deny("http://127.0.0.1./", "loopback", "PS trailing dot on IPv4"),
    deny("http://foo.localhost/", "localhost", "OWASP *.localhost"),
    deny("http:127.0.0.1/", "loopback", "ORANGE missing slashes"),
    deny("http:\\\\127.0.0.1\\", "loopback", "ORANGE backslashes"),
    // Parser confusion: userinfo, fragments, backslashes.
    deny("http://evil.com@127.0.0.1/", "loopback", "PATT/PS userinfo"),
    deny("http://127.0.0.1#@evil.com/", "loopback", "PS fragment"),
    deny("http://google.com:80+&@127.88.23.245:22/#+@google.com:80/", "loopback", "ORANGE userinfo + fragment"),
    deny("http://127.1.1.1:80\\@127.2.2.2:80/", "loopback", "ORANGE backslash before @"),
    deny("http://127.1.1.1:80\\@@127.2.2.2:80/", "loopback", "ORANGE backslash double @"),
    deny("http://127.1.1.1:80#\\@127.2.2.2:80/", "loopback", "ORANGE fragment backslash"),
    deny("http://127.1.1.1:80:\\@@127.2.2.2:80/", "invalid URL", "ORANGE double port"),
    // Cloud metadata.
    deny("http://169.254.169.254/latest/meta-data/", "cloud metadata", "CLOUD AWS/Azure/GCP"),
    deny("http://[fd00:ec2::254]/latest/meta-data/", "cloud metadata", "CLOUD AWS IPv6"),
    deny("http://metadata.google.internal/computeMetadata/v1/", "metadata name", "CLOUD GCP"),
    deny("http://metadata/computeMetadata/v1/", "metadata name", "CLOUD GCP short"),
    deny("http://metadata.google.internal./", "metadata name", "CLOUD GCP trailing dot"),
    deny("http://100.100.100.200/latest/meta-data/", "Alibaba", "CLOUD Alibaba"),
    deny("http://192.0.0.192/latest/", "Oracle", "CLOUD Oracle"),
    deny("http://169.254.170.2/v2/credentials", "ECS", "CLOUD AWS ECS"),
    deny("http://metadata.tencentyun.com/latest/meta-data/", "metadata name", "CLOUD Tencent"),
    deny("http://instance-data/latest/meta-data/", "metadata name", "CLOUD AWS name"),
    deny("http://169.254.169.254.nip.io/", "cloud metadata", "PATT nip.io metadata"),
    deny("http://[::ffff:169.254.169.254]/", "cloud metadata", "PATT IPv4-mapped metadata"),
    deny("http://[::ffff:a9fe:a9fe]/", "cloud metadata", "PATT IPv4-mapped hex metadata"),
    deny("http://[0:0:0:0:0:ffff:169.254.169.254]/", "cloud metadata", "PATT long mapped metadata"),
    deny("http://0251.0376.0251.0376/", "cloud metadata", "PATT octal metadata"),
    deny("http://0xA9.0xFE.0xA9.0xFE/", "cloud metadata", "PATT hex dotted metadata"),
    deny("http://0xA9FEA9FE/", "cloud metadata", "PATT hex metadata"),
    deny("http://2852039166/", "cloud metadata", "PATT decimal metadata"),
    deny("http://169.254.43518/", "cloud metadata", "PATT short form metadata"),
    deny("http://169.16689662/", "cloud metadata", "PATT short form metadata"),
    deny("http://425.510.425.510/", "invalid URL", "PATT overflowing dotted"),
    deny("http://7147006462/", "invalid URL", "PATT overflowing decimal"),
    deny("http://0x41414141A9FEA9FE/", "invalid URL", "PATT overflowing hex"),
    deny("http://1ynrnhl.xip.io/", "cloud metadata", "PATT xip.io"),
    deny("http://www.owasp.org.1ynrnhl.xip.io/", "cloud metadata", "PATT xip.io"),
    deny("http://[64:ff9b::a9fe:a9fe]/", "NAT64", "IANA6 NAT64 metadata"),
    deny("http://[2002:a9fe:a9fe::]/", "6to4", "IANA6 6to4 metadata"),
    // Private, shared, reserved and special ranges.
    deny("http://10.0.0.1/", "private", "IANA4 10/8"),
    deny("http://172.16.0.1/", "private", "IANA4 172.16/12"),
    deny("http://172.31.255.255/", "private", "IANA4 172.16/12 top"),
    deny("http://192.168.1.1/", "private", "OWASP 192.168/16"),
    deny("http://100.64.0.1/", "CGNAT", "IANA4 100.64/10"),
    deny("http://198.18.0.1/", "benchmarking", "IANA4 198.18/15"),
    deny("http://192.0.2.1/", "documentation", "IANA4 TEST-NET-1"),
    deny("http://198.51.100.1/", "documentation", "IANA4 TEST-NET-2"),
    deny("http://203.0.113.1/", "documentation", "IANA4 TEST-NET-3"),
    deny("http://224.0.0.1/", "multicast", "IANA4 multicast"),
    deny("http://239.255.255.250/", "multicast", "IANA4 SSDP multicast"),
    deny("http://255.255.255.255/", "broadcast", "IANA4 broadcast"),
    deny("http://240.0.0.1/", "reserved", "IANA4 240/4"),
    deny("http://192.88.99.1/", "6to4 relay", "IANA4 192.88.99/24"),
    deny("http://[fe80::1]/", "link-local", "IANA6 fe80::/10"),
    deny("http://[fe80::1%25eth0]/", "invalid URL", "PS IPv6 zone id"),
    deny("http://[fc00::1]/", "unique local", "IANA6 fc00::/7"),
    deny("http://[fd12:3456:789a::1]/", "unique local", "IANA6 fd00::/8"),
    deny("http://[fec0::1]/", "site-local", "IANA6 fec0::/10"),
    deny("http://[ff02::1]/", "multicast", "IANA6 ff00::/8"),
    deny("http://[64:ff9b::7f00:1]/", "NAT64", "IANA6 NAT64 loopback"),
    deny("http://[2002:7f00:1::]/", "6to4", "IANA6 6to4 loopback"),
    deny("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "Teredo", "IANA6 Teredo client 127.0.0.1"),
    deny("http://[2001:db8::1]/", "documentation", "IANA6 2001:db8::/32"),
    deny("http://[100::1]/", "discard", "IANA6 100::/64"),
    deny("http://[::ffff:0:7f00:1]/", "IPv4-translated", "IANA6 ::ffff:0:0:0/96"),
    deny("http://[4000::1]/", "reserved", "IANA6 outside 2000::/3"),
    deny("http://kubernetes.default.svc/", "private", "PS internal service name"),
    deny("http://mixed.test/", "private", "OWASP every address must pass"),
    deny("http://7f000001.c0a80001.rbndr.us/", "loopback", "PS DNS rebinding service"),
    deny("http://make-127-0-0-1-rr.1u.ms/", "loopback", "PATT DNS rebinding service"),
    deny("http://nxdomain.test/", "could not resolve", "unresolvable name"),
    // Other schemes.
    deny("file:///etc/passwd", "scheme", "PATT file"),
    deny("gopher://127.0.0.1:25/_HELO%20localhost", "scheme", "PATT gopher"),
    deny("dict://127.0.0.1:11211/stat", "scheme", "PATT dict"),
    deny("ftp://127.0.0.1/", "scheme", "PATT ftp"),
    deny("ldap://localhost:11211/%0astats%0aquit", "scheme", "PATT ldap"),
    deny("sftp://evil.com:11111/", "scheme", "PATT sftp"),
    deny("tftp://evil.com:12346/TESTUDPPACKET", "scheme", "PATT tftp"),
    deny("jar:http://127.0.0.1!/", "scheme", "PATT jar"),
    deny("netdoc:///etc/passwd", "scheme", "PATT netdoc"),
    deny("data:text/plain,hello", "scheme", "OWASP data"),
    deny("javascript:alert(1)", "scheme", "OWASP javascript"),
    deny("ws://example.com/", "scheme", "websocket"),
    deny("http:///", "invalid URL", "empty host"),
    deny("not a url", "invalid URL", "garbage"),
    // Allowed: public addresses in every spelling, and the operator's allowlist.
    allow("http://example.com/", "globally routable", "public name"),
    allow("https://example.com./", "globally routable", "public name, trailing dot"),
    allow("http://EXAMPLE.com/", "globally routable", "public name, case"),
    allow("http://user:pass@example.com/", "globally routable", "userinfo on a public host"),
    allow("http://93.184.215.14/", "globally routable", "public IPv4"),
    allow("http://1.1.1.1/", "globally routable", "public IPv4"),
    allow("http://8.8.8.8:8080/", "globally routable", "public IPv4, other port"),
    allow("http://172.32.0.1/", "globally routable", "just outside 172.16/12"),
    allow("http://100.128.0.1/", "globally routable", "just outside 100.64/10"),
    allow("http://[2606:4700:4700::1111]/", "globally routable", "public IPv6"),
    allow("http://[::ffff:1.1.1.1]/", "globally routable", "IPv4-mapped public"),
    allow("http://[64:ff9b::101:101]/", "globally routable", "NAT64 public"),
    allow("https://例え.テスト/", "globally routable", "IDNA name"),
    allow("http://nas.lan/", "allowlist nas.lan", "operator allowlist host"),
    allow("http://printer.home.arpa/", "allowlist *.home.arpa", "operator allowlist wildcard"),
    allow("http://10.9.8.7:8443/", "allowlist 10.9.8.0/24:8443", "operator allowlist CIDR and port"),
    deny("http://10.9.8.7:8080/", "private", "operator allowlist port mismatch"),
    deny("http://home.arpa/", "private", "wildcard does not match the bare suffix"),
];

/// The answers the real services behind these names give (nip.io, xip.io, rbndr.us, 1u.ms and
/// the PayloadsAllTheThings names all resolve to the embedded or listed address).
fn resolver() -> StaticResolver {
    let idn = url::Url::parse("https://例え.テスト/").unwrap().host_str().unwrap().to_owned();
    StaticResolver::new()
        .with("localtest.me", &[ip("127.0.0.1")])
        .with("customer1.app.localhost.my.company.127.nip.io", &[ip("127.0.0.1")])
        .with("mail.ebc.apple.com", &[ip("127.0.0.6")])
        .with("bugbounty.dod.network", &[ip("127.0.0.2")])
        .with("spoofed.burpcollaborator.net", &[ip("127.0.0.1")])
        .with("127.0.0.1.nip.io", &[ip("127.0.0.1")])
        .with("169.254.169.254.nip.io", &[ip("169.254.169.254")])
        .with("1ynrnhl.xip.io", &[ip("169.254.169.254")])
        .with("www.owasp.org.1ynrnhl.xip.io", &[ip("169.254.169.254")])
        .with("kubernetes.default.svc", &[ip("10.96.0.1")])
        .with("mixed.test", &[ip("93.184.215.14"), ip("192.168.0.1")])
        .with("7f000001.c0a80001.rbndr.us", &[ip("127.0.0.1")])
        .with("make-127-0-0-1-rr.1u.ms", &[ip("127.0.0.1")])
        .with("example.com", &[ip("93.184.215.14"), ip("2606:2800:21f:cb07:6820:80da:af6b:8b2c")])
        .with(&idn, &[ip("93.184.215.14")])
        .with("nas.lan", &[ip("192.168.1.10")])
        .with("printer.home.arpa", &[ip("192.168.1.20")])
        .with("home.arpa", &[ip("192.168.1.1")])
}

#[tokio::test]
async fn ssrf_url_table() {
    assert!(CASES.len() >= 80, "the issue asks for at least 80 cases, have {}", CASES.len());
    let config = EgressConfig {
        allow: vec!["nas.lan".to_owned(), "*.home.arpa".to_owned(), "10.9.8.0/24:8443".to_owned()],
        ..EgressConfig::default()
    };
    let egress = Egress::with_resolver(config, Arc::new(resolver())).unwrap();
    let mut failures = Vec::new();
    for case in CASES {
        let verdict = egress.check(case.url).await;
        if verdict.allowed != case.allow || !verdict.rule.contains(case.rule) {
            failures.push(format!(
                "{} [{}]: expected {} by {:?}, got {verdict}",
                case.url,
                case.source,
                if case.allow { "allow" } else { "deny" },
                case.rule
            ));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), CASES.len(), failures.join("\n"));
}
