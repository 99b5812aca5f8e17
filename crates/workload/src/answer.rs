//! [`Answer`]: a response as a flow step's checks and extractions see it: status,
//! header lines and the body bytes kept, borrowed from the engine's buffers.

/// One answer, or the lack of one (`status` 0: the request failed below HTTP).
#[derive(Debug, Clone, Copy, Default)]
pub struct Answer<'a> {
    /// The HTTP status; 0 when no answer came.
    pub status: u16,
    /// The head's header lines (`Name: value`, CRLF or LF ended); lines without a
    /// colon (the status line) are skipped.
    pub head: &'a [u8],
    /// The body bytes kept (the first `check_body_limit` of them).
    pub body: &'a [u8],
    /// The whole body's size as read off the wire.
    pub body_bytes: u64,
    /// From the request's intended send time to its end.
    pub latency_ns: u64,
    /// A gRPC call's status code (`grpc-status`), when the answer had one.
    pub grpc_status: Option<u8>,
}

impl<'a> Answer<'a> {
    /// Values of the headers named `name` (case-insensitive), in order.
    pub fn headers<'n>(&self, name: &'n str) -> impl Iterator<Item = &'a [u8]> + 'n
    where
        'a: 'n,
    {
        self.head.split(|&b| b == b'\n').filter_map(move |line| {
            let colon = line.iter().position(|&b| b == b':')?;
            line[..colon]
                .trim_ascii()
                .eq_ignore_ascii_case(name.as_bytes())
                .then(|| line[colon + 1..].trim_ascii())
        })
    }

    /// The first header named `name`.
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers(name).next()
    }

    /// Whether the body kept is only the start of the body read.
    pub fn body_cut(&self) -> bool {
        (self.body.len() as u64) < self.body_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_headers_by_name() {
        let answer = Answer {
            status: 200,
            head: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nSet-Cookie: a=1\r\nset-cookie:  b=2 \r\n\r\n",
            body: b"{}",
            body_bytes: 2,
            latency_ns: 5,
            grpc_status: None,
        };
        assert_eq!(
            answer.header("content-type"),
            Some(&b"application/json"[..])
        );
        let cookies: Vec<&[u8]> = answer.headers("Set-Cookie").collect();
        assert_eq!(cookies, [&b"a=1"[..], &b"b=2"[..]]);
        assert_eq!(answer.header("x-missing"), None);
        assert_eq!(answer.header("HTTP/1.1 200 OK"), None);
        assert!(!answer.body_cut());
    }
}
