//! The address policy of what extpool fetches or connects to for a model
//! or a client: which IP addresses `FetchMcpResource` may reach, and which
//! a per-session server (an MCP server a gateway client brings) may be on
//! ([`AddressRule`]). Applied to IP literals before connecting and to
//! every DNS answer before each connection is made, to the address then
//! connected to — so a name that resolves elsewhere later (DNS rebinding)
//! is checked again.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BlockedAddress {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, fc00::/7.
    Private,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// A cloud metadata endpoint (169.254.169.254, fd00:ec2::254, metadata host names).
    Metadata,
    /// 100.64/10 (carrier-grade NAT).
    Shared,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// Multicast and broadcast.
    Multicast,
    /// Reserved, documentation and benchmarking ranges.
    Reserved,
}

impl std::fmt::Display for BlockedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link-local",
            Self::Metadata => "cloud metadata",
            Self::Shared => "shared (carrier-grade NAT)",
            Self::Unspecified => "unspecified",
            Self::Multicast => "multicast or broadcast",
            Self::Reserved => "reserved",
        })
    }
}

/// Host names of cloud metadata services, refused before resolution.
const METADATA_HOSTS: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.internal",
    "instance-data",
    "instance-data.ec2.internal",
];

/// Classifies a URL's host before resolution: an IP literal (IPv6 in
/// brackets or not) by [`check_address`], a cloud metadata host name as
/// [`BlockedAddress::Metadata`]; `None` for any other name (it is checked
/// again once resolved) and for public addresses.
pub fn check_host(host: &str) -> Option<(IpAddr, BlockedAddress)> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        return check_address(ip).map(|reason| (ip, reason));
    }
    let domain = host.trim_end_matches('.').to_ascii_lowercase();
    METADATA_HOSTS
        .contains(&domain.as_str())
        .then_some((IpAddr::V4(Ipv4Addr::UNSPECIFIED), BlockedAddress::Metadata))
}

/// Classifies an IPv4 address; `None` when it is public.
fn check_v4(ip: Ipv4Addr) -> Option<BlockedAddress> {
    let [a, b, c, _] = ip.octets();
    Some(match () {
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200) => {
            BlockedAddress::Metadata
        }
        _ if ip.is_loopback() => BlockedAddress::Loopback,
        _ if ip.is_private() => BlockedAddress::Private,
        _ if ip.is_link_local() => BlockedAddress::LinkLocal,
        _ if a == 100 && (64..128).contains(&b) => BlockedAddress::Shared,
        _ if a == 0 => BlockedAddress::Unspecified,
        _ if ip.is_multicast() || ip.is_broadcast() => BlockedAddress::Multicast,
        _ if a >= 240
            || (a == 192 && b == 0 && (c == 0 || c == 2))
            || (a == 198 && (b == 18 || b == 19))
            || (a == 198 && b == 51 && c == 100)
            || (a == 203 && b == 0 && c == 113) =>
        {
            BlockedAddress::Reserved
        }
        _ => return None,
    })
}

/// Classifies an IP address after resolution; `None` when it is public.
pub fn check_address(ip: IpAddr) -> Option<BlockedAddress> {
    let v6 = match ip {
        IpAddr::V4(v4) => return check_v4(v4),
        IpAddr::V6(v6) => v6,
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return check_v4(v4);
    }
    let s = v6.segments();
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return check_v4(Ipv4Addr::new(
            (s[6] >> 8) as u8,
            s[6] as u8,
            (s[7] >> 8) as u8,
            s[7] as u8,
        ));
    }
    if s[0] == 0x2002 {
        return check_v4(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    Some(match () {
        _ if v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) => BlockedAddress::Metadata,
        _ if v6.is_loopback() => BlockedAddress::Loopback,
        _ if v6.is_unspecified() => BlockedAddress::Unspecified,
        _ if (s[0] & 0xfe00) == 0xfc00 => BlockedAddress::Private,
        _ if (s[0] & 0xffc0) == 0xfe80 || (s[0] & 0xffc0) == 0xfec0 => BlockedAddress::LinkLocal,
        _ if v6.is_multicast() => BlockedAddress::Multicast,
        // ::/96 (IPv4-compatible, deprecated), 2001:db8::/32 (documentation).
        _ if (s[0..6] == [0, 0, 0, 0, 0, 0]) || (s[0] == 0x2001 && s[1] == 0xdb8) => {
            BlockedAddress::Reserved
        }
        _ => return None,
    })
}

/// The address rule of a per-session server: a public address, or also
/// a loopback, private or shared one where the operator allows them; never
/// a link-local, cloud metadata, unspecified, multicast or reserved one.
/// Checked when the session is made and again at each connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AddressRule {
    /// Whether loopback, private and shared (carrier-grade NAT) addresses
    /// are allowed too.
    pub allow_private: bool,
}

impl AddressRule {
    /// Why `ip` is refused by this rule, if it is.
    pub fn refuses(&self, ip: IpAddr) -> Option<BlockedAddress> {
        check_address(ip).filter(|reason| !(self.allow_private && is_private_kind(*reason)))
    }

    /// Why a URL's `host` is refused before resolution (an IP literal, a
    /// cloud metadata host name), if it is: what [`AddressRefused`] says.
    pub fn refuses_host(&self, host: &str) -> Option<AddressRefused> {
        let (address, reason) = check_host(host)?;
        (!(self.allow_private && is_private_kind(reason))).then(|| AddressRefused {
            host: host.to_owned(),
            address,
            reason,
        })
    }

    /// The first of `addresses` (what `host` resolved to) this rule
    /// refuses, if any: one refused address refuses the name.
    pub fn refuses_any(
        &self,
        host: &str,
        addresses: impl IntoIterator<Item = IpAddr>,
    ) -> Option<AddressRefused> {
        addresses.into_iter().find_map(|address| {
            self.refuses(address).map(|reason| AddressRefused {
                host: host.to_owned(),
                address,
                reason,
            })
        })
    }
}

/// Whether addresses of kind `reason` are the ones an operator may allow
/// (loopback, private, shared).
fn is_private_kind(reason: BlockedAddress) -> bool {
    matches!(
        reason,
        BlockedAddress::Loopback | BlockedAddress::Private | BlockedAddress::Shared
    )
}

/// A host whose address an [`AddressRule`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct AddressRefused {
    /// The host as the URL names it.
    pub host: String,
    /// The address refused (unspecified for a metadata host refused by
    /// its name).
    pub address: IpAddr,
    /// Why.
    pub reason: BlockedAddress,
}

impl AddressRefused {
    /// Whether an operator could allow it (a loopback, private or shared
    /// address).
    pub fn allowable(&self) -> bool {
        is_private_kind(self.reason)
    }

    fn describe(&self) -> String {
        let word = self.reason.to_string();
        let article = if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        };
        // A metadata host refused by its name has no address to show.
        let shown = if self.address.is_unspecified() && self.reason == BlockedAddress::Metadata {
            String::new()
        } else {
            format!(" ({})", self.address)
        };
        format!(
            "{} is {article} {word} address{shown}; a per-session server must be on a public address",
            self.host
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_classified_before_resolution() {
        assert_eq!(check_host("example.com"), None);
        assert_eq!(check_host("8.8.8.8"), None);
        assert_eq!(
            check_host("[::1]").map(|(_, r)| r),
            Some(BlockedAddress::Loopback)
        );
        assert_eq!(
            check_host("169.254.169.254").map(|(_, r)| r),
            Some(BlockedAddress::Metadata)
        );
        assert_eq!(
            check_host("Metadata.Google.Internal.").map(|(_, r)| r),
            Some(BlockedAddress::Metadata)
        );
    }

    #[test]
    fn address_policy_table() {
        let cases: &[(&str, Option<BlockedAddress>)] = &[
            ("8.8.8.8", None),
            ("1.1.1.1", None),
            ("2606:4700:4700::1111", None),
            ("127.0.0.1", Some(BlockedAddress::Loopback)),
            ("127.1.2.3", Some(BlockedAddress::Loopback)),
            ("::1", Some(BlockedAddress::Loopback)),
            ("10.0.0.1", Some(BlockedAddress::Private)),
            ("172.16.5.4", Some(BlockedAddress::Private)),
            ("172.31.255.255", Some(BlockedAddress::Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(BlockedAddress::Private)),
            ("fd12:3456::1", Some(BlockedAddress::Private)),
            ("169.254.1.1", Some(BlockedAddress::LinkLocal)),
            ("fe80::1", Some(BlockedAddress::LinkLocal)),
            ("169.254.169.254", Some(BlockedAddress::Metadata)),
            ("fd00:ec2::254", Some(BlockedAddress::Metadata)),
            ("100.100.100.200", Some(BlockedAddress::Metadata)),
            ("100.64.0.1", Some(BlockedAddress::Shared)),
            ("0.0.0.0", Some(BlockedAddress::Unspecified)),
            ("::", Some(BlockedAddress::Unspecified)),
            ("224.0.0.1", Some(BlockedAddress::Multicast)),
            ("255.255.255.255", Some(BlockedAddress::Multicast)),
            ("ff02::1", Some(BlockedAddress::Multicast)),
            ("240.0.0.1", Some(BlockedAddress::Reserved)),
            ("192.0.2.1", Some(BlockedAddress::Reserved)),
            ("2001:db8::1", Some(BlockedAddress::Reserved)),
            // IPv4 inside IPv6
            ("::ffff:127.0.0.1", Some(BlockedAddress::Loopback)),
            ("::ffff:169.254.169.254", Some(BlockedAddress::Metadata)),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::a00:1", Some(BlockedAddress::Private)),
            ("2002:a9fe:a9fe::", Some(BlockedAddress::Metadata)),
        ];
        for (ip, expected) in cases {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(check_address(ip), *expected, "{ip}");
        }
    }

    #[test]
    fn the_rule_of_per_session_servers_allows_private_addresses_only_when_told() {
        let public = AddressRule::default();
        let private = AddressRule {
            allow_private: true,
        };
        for ip in [
            "127.0.0.1",
            "::1",
            "10.1.2.3",
            "::ffff:127.0.0.1",
            "100.64.0.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(public.refuses(ip).is_some(), "{ip}");
            assert_eq!(private.refuses(ip), None, "{ip}");
        }
        for ip in [
            "169.254.169.254",
            "::ffff:169.254.169.254",
            "fe80::1",
            "0.0.0.0",
            "240.0.0.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(private.refuses(ip).is_some(), "{ip}");
        }
        let refused = public
            .refuses_any(
                "flip.example",
                ["8.8.8.8".parse().unwrap(), "127.0.0.1".parse().unwrap()],
            )
            .unwrap();
        assert_eq!(
            refused.to_string(),
            "flip.example is a loopback address (127.0.0.1); a per-session server must be on a public address"
        );
        assert!(refused.allowable());
        let metadata = private.refuses_host("metadata.google.internal").unwrap();
        assert_eq!(
            metadata.to_string(),
            "metadata.google.internal is a cloud metadata address; a per-session server must be on a public address"
        );
        assert!(!metadata.allowable());
        assert_eq!(private.refuses_host("[::1]"), None);
        assert_eq!(public.refuses_host("example.com"), None);
    }
}
