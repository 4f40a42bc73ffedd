//! Algorithm messages on the wire: postcard, a compact serde format (f32s as
//! their 4 little-endian bytes).

use serde::Serialize;
use serde::de::DeserializeOwned;

use fedcluster_core::Message;

use crate::NetError;

/// Encodes one message.
pub fn encode<T: Serialize>(message: &T) -> Result<Vec<u8>, NetError> {
    postcard::to_allocvec(message).map_err(|e| NetError::Codec(e.to_string()))
}

/// Decodes one message; trailing bytes are an error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, NetError> {
    let (message, rest) =
        postcard::take_from_bytes(bytes).map_err(|e| NetError::Codec(e.to_string()))?;
    if !rest.is_empty() {
        return Err(NetError::Codec(format!(
            "{} bytes after the message",
            rest.len()
        )));
    }
    Ok(message)
}

/// A client's reply, decoded and checked finite; otherwise why it is refused
/// (what `replies.csv` and the Python package report).
pub fn decode_reply<Up: DeserializeOwned + Message>(bytes: &[u8]) -> Result<Up, String> {
    match decode::<Up>(bytes) {
        Ok(up) if up.is_finite() => Ok(up),
        Ok(_) => Err("non-finite values (NaN or infinity) in the reply".into()),
        Err(e) => Err(format!("undecodable reply: {e}")),
    }
}
