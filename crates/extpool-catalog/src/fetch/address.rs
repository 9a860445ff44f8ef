//! The address policy of `FetchMcpResource`: which IP addresses a fetch
//! may connect to. Applied to IP literals before connecting and to every
//! DNS answer before the connection is made.

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
}
