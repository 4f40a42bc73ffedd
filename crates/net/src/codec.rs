//! Algorithm messages on the wire: postcard, a compact serde format (f32s as
//! their 4 little-endian bytes).

use serde::Serialize;
use serde::de::DeserializeOwned;

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
