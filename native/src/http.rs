//! Bounds on each S3 request of the engine that object_store 0.12's client
//! options lack (they have a connect and a total timeout): the wait for a
//! response to a request without a body; for one with a body, its upload at
//! no less than MIN_UPLOAD_RATE and then the wait for the response (an
//! endpoint that stops reading an upload blocks it, which reqwest cannot
//! report as progress); and the wait for each next part of a response body.
//! A store that accepts connections and never answers or reads, or a body
//! that stops half-way, is then a timeout that object_store retries (a body
//! with a range request for the rest) within its RetryConfig, instead of a
//! wait for the total timeout. Go sets the limits (pkg/awsconfig.Limits).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use http_body::{Body, Frame, SizeHint};
use slatedb::bytes::Bytes;
use slatedb::object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpResponseBody, HttpService, ReqwestConnector,
};
use slatedb::object_store::ClientOptions;
use tokio::time::{Instant, Sleep};

/// The bounds, as an HttpConnector for AmazonS3Builder.
#[derive(Debug, Clone, Copy)]
pub struct Guard {
    /// From sending a request without a body to its response's headers (one
    /// with a body gets its upload's time at MIN_UPLOAD_RATE and a stall
    /// more).
    pub first_byte: Duration,
    /// The longest wait for the next part of a response body.
    pub stall: Duration,
}

impl HttpConnector for Guard {
    fn connect(&self, options: &ClientOptions) -> slatedb::object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Bounded {
            inner,
            limits: *self,
        }))
    }
}

/// Why a request was given up; object_store's error around it names the
/// method and URL (so the endpoint).
/// The slowest upload taken for a live endpoint: 1 MiB/s. A request's body
/// (an SST, a part: tens of MiB at most) sent slower than this, with its
/// response, is an endpoint that stopped reading it.
const MIN_UPLOAD_RATE: f64 = 1024.0 * 1024.0;

#[derive(Debug)]
enum Silence {
    NoResponse(Duration),
    /// The upload of a body and its response took longer than its bound.
    UploadStalled {
        bytes: u64,
        after: Duration,
    },
    /// A body error carries no URL from object_store: name the endpoint.
    Stalled {
        after: Duration,
        from: String,
    },
}

impl fmt::Display for Silence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Silence::NoResponse(d) => write!(
                f,
                "no response within {d:?} (ROCKLAKE_S3_FIRST_BYTE_TIMEOUT)"
            ),
            Silence::UploadStalled { bytes, after } => write!(
                f,
                "the upload stalled: {bytes} bytes sent and answered not within {after:?} (1 MiB/s, ROCKLAKE_S3_FIRST_BYTE_TIMEOUT and ROCKLAKE_S3_STALL_TIMEOUT)"
            ),
            Silence::Stalled { after, from } => write!(
                f,
                "the response from {from} stalled: no data for {after:?} (ROCKLAKE_S3_STALL_TIMEOUT)"
            ),
        }
    }
}

impl std::error::Error for Silence {}

#[derive(Debug)]
struct Bounded {
    inner: HttpClient,
    limits: Guard,
}

#[async_trait]
impl HttpService for Bounded {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let uri = req.uri();
        let from = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("http"),
            uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        let bytes = req.body().content_length() as u64;
        let res = if bytes == 0 {
            let first_byte = self.limits.first_byte;
            tokio::time::timeout(first_byte, self.inner.execute(req))
                .await
                .map_err(|_| {
                    HttpError::new(HttpErrorKind::Timeout, Silence::NoResponse(first_byte))
                })??
        } else {
            let after = self.limits.first_byte
                + self.limits.stall
                + Duration::from_secs_f64(bytes as f64 / MIN_UPLOAD_RATE);
            tokio::time::timeout(after, self.inner.execute(req))
                .await
                .map_err(|_| {
                    HttpError::new(
                        HttpErrorKind::Timeout,
                        Silence::UploadStalled { bytes, after },
                    )
                })??
        };
        let stall = self.limits.stall;
        Ok(res.map(|body| HttpResponseBody::new(StallBody::new(body, stall, from))))
    }
}

/// A response body whose every wait for more data is bounded. Only a wait
/// while the body is polled counts: a consumer that is slow to ask is not a
/// stall.
struct StallBody {
    inner: HttpResponseBody,
    limit: Duration,
    from: String,
    timer: Pin<Box<Sleep>>,
    waiting: bool,
}

impl StallBody {
    fn new(inner: HttpResponseBody, limit: Duration, from: String) -> StallBody {
        StallBody {
            inner,
            limit,
            from,
            timer: Box::pin(tokio::time::sleep(limit)),
            waiting: false,
        }
    }
}

impl Body for StallBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = &mut *self;
        if !this.waiting {
            this.waiting = true;
            let deadline = Instant::now() + this.limit;
            this.timer.as_mut().reset(deadline);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(r) => {
                this.waiting = false;
                Poll::Ready(r)
            }
            Poll::Pending => match this.timer.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.waiting = false;
                    Poll::Ready(Some(Err(HttpError::new(
                        HttpErrorKind::Timeout,
                        Silence::Stalled {
                            after: this.limit,
                            from: this.from.clone(),
                        },
                    ))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
