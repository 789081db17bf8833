// The annotation API (`config.api`): JSON in, `{status, data}` out. An HTTP error is a result
// like any other (the caller reads its status); only a network failure rejects.

// The CSRF token: from the page's <meta> tag (the cookie is HttpOnly), the cookie as a fallback.
export function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  if (meta && meta.content) { return meta.content; }
  const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}

// The message of an error body (`{"error": {"code", "message"}}`), or `fallback`.
export function errorText(result, fallback) {
  const error = result && result.data && result.data.error;
  return (error && error.message) || fallback;
}

export class Api {
  constructor(base) {
    this.base = base;  // e.g. "/annotate/api/"
  }

  // `options.keepalive`: the request outlives the page (pagehide).
  request(method, path, body, options) {
    const init = {
      method: method,
      credentials: "same-origin",
      headers: {"Accept": "application/json", "X-CSRFToken": csrfToken()}
    };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (options && options.keepalive) { init.keepalive = true; }
    return fetch(this.base + path, init).then((response) => {
      if (response.status === 204) { return {status: 204, data: null}; }
      return response.json().then(
        (data) => ({status: response.status, data: data}),
        () => ({status: response.status, data: null}));
    });
  }

  get(path) { return this.request("GET", path); }

  post(path, body, options) { return this.request("POST", path, body, options); }
}
