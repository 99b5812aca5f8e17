//! gRPC status codes by the names the spec gives them (`OK`, `UNAVAILABLE`): how users
//! write them (a flow's `grpc OK` check) and how records' codes are shown.

/// The names of the codes of the gRPC spec, by code (0 `OK` .. 16 `UNAUTHENTICATED`).
pub const GRPC_CODE_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// The code named `name` (as the spec spells it, any case); `None` for another word.
pub fn grpc_code(name: &str) -> Option<u8> {
    GRPC_CODE_NAMES
        .iter()
        .position(|known| known.eq_ignore_ascii_case(name))
        .map(|code| code as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_found_by_name_in_any_case() {
        let rows = [
            ("OK", Some(0)),
            ("unavailable", Some(14)),
            ("UNAUTHENTICATED", Some(16)),
            ("NOPE", None),
            ("", None),
        ];
        for (name, want) in rows {
            assert_eq!(grpc_code(name), want, "{name}");
        }
    }
}
