//! The length-prefixed frame a gRPC message travels in, shared by calls and by the
//! reflection questions asked before them.

/// `message` behind gRPC's length prefix (not compressed).
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}
