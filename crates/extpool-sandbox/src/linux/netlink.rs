//! The two rtnetlink requests a confined server's network namespace needs,
//! built as bytes before the fork (the child only sends them): bring `lo`
//! up, and give `lo` an allowed target's address so that a connection to
//! it stays inside the namespace, where extpool's listener waits.

use std::net::IpAddr;

/// `lo`'s interface index, the same in every network namespace.
const LOOPBACK_INDEX: i32 = 1;
const RTM_NEWLINK: u16 = 16;
const RTM_NEWADDR: u16 = 20;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_CREATE: u16 = 0x400;
const NLM_F_EXCL: u16 = 0x200;
const NLMSG_ERROR: u16 = 2;
const IFF_UP: u32 = 0x1;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_F_NODAD: u8 = 0x02;
const RT_SCOPE_HOST: u8 = 254;
const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

/// Appends a netlink message header for a body of `body_len` bytes.
fn header(out: &mut Vec<u8>, body_len: usize, kind: u16, flags: u16) {
    let len = u32::try_from(16 + body_len).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&1u32.to_ne_bytes()); // sequence number
    out.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it
}

/// `RTM_NEWLINK` setting `IFF_UP` on `lo`, asking for an acknowledgement.
pub(crate) fn loopback_up() -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    header(&mut out, 16, RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK);
    // struct ifinfomsg
    out.push(0); // ifi_family: AF_UNSPEC
    out.push(0); // padding
    out.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
    out.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
    out.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_flags
    out.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_change
    out
}

/// `RTM_NEWADDR` giving `lo` the host address `ip` (/32 or /128).
pub(crate) fn add_address(ip: IpAddr) -> Vec<u8> {
    let (family, prefix, bytes): (u8, u8, Vec<u8>) = match ip {
        IpAddr::V4(v4) => (AF_INET, 32, v4.octets().to_vec()),
        IpAddr::V6(v6) => (AF_INET6, 128, v6.octets().to_vec()),
    };
    let attr_len = 4 + bytes.len();
    let body_len = 8 + 2 * attr_len;
    let mut out = Vec::with_capacity(16 + body_len);
    header(
        &mut out,
        body_len,
        RTM_NEWADDR,
        NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
    );
    // struct ifaddrmsg
    out.push(family);
    out.push(prefix);
    out.push(IFA_F_NODAD);
    out.push(RT_SCOPE_HOST);
    out.extend_from_slice(&(LOOPBACK_INDEX as u32).to_ne_bytes());
    for kind in [IFA_LOCAL, IFA_ADDRESS] {
        out.extend_from_slice(&(attr_len as u16).to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(&bytes);
    }
    out
}

/// The error an acknowledgement carries: `Ok` for 0, else the errno.
pub(crate) fn ack_errno(reply: &[u8]) -> Result<(), i32> {
    let kind = reply
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .unwrap_or(0);
    if kind != NLMSG_ERROR {
        return Err(libc_eproto());
    }
    let code = reply
        .get(16..20)
        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .unwrap_or(-libc_eproto());
    if code == 0 { Ok(()) } else { Err(-code) }
}

/// EPROTO: a reply that is not an acknowledgement.
fn libc_eproto() -> i32 {
    rustix::io::Errno::PROTO.raw_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_have_their_length_in_their_header() {
        for msg in [
            loopback_up(),
            add_address("10.1.2.3".parse().unwrap()),
            add_address("fd00::1".parse().unwrap()),
        ] {
            let len = u32::from_ne_bytes([msg[0], msg[1], msg[2], msg[3]]) as usize;
            assert_eq!(len, msg.len());
            assert_eq!(len % 4, 0, "netlink messages are 4-byte aligned");
        }
    }

    #[test]
    fn an_ack_is_read() {
        let mut reply = Vec::new();
        header(&mut reply, 4, NLMSG_ERROR, 0);
        reply.extend_from_slice(&0i32.to_ne_bytes());
        assert_eq!(ack_errno(&reply), Ok(()));
        reply.truncate(16);
        reply.extend_from_slice(&(-1i32).to_ne_bytes());
        assert_eq!(ack_errno(&reply), Err(1));
    }
}
