/** A small fetch wrapper for tests: JSON in, `{status, body, headers}` out. */
export interface Reply<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

export interface RequestOptions {
  token?: string;
  headers?: Record<string, string>;
  /** Sent as is (not JSON-encoded). */
  raw?: string | Buffer;
}

export class Client {
  constructor(readonly baseUrl: string, readonly token?: string) {}

  as(token: string | undefined): Client {
    return new Client(this.baseUrl, token);
  }

  async request<T = any>(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    const token = opts.token ?? this.token;
    if (token) headers.authorization = `Bearer ${token}`;
    let payload: string | Buffer | undefined;
    if (opts.raw !== undefined) payload = opts.raw;
    else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.baseUrl + path, { method, headers, body: payload as BodyInit | undefined });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  }

  get<T = any>(path: string, opts?: RequestOptions) { return this.request<T>('GET', path, undefined, opts); }
  post<T = any>(path: string, body?: unknown, opts?: RequestOptions) { return this.request<T>('POST', path, body, opts); }
  put<T = any>(path: string, body?: unknown, opts?: RequestOptions) { return this.request<T>('PUT', path, body, opts); }
  patch<T = any>(path: string, body?: unknown, opts?: RequestOptions) { return this.request<T>('PATCH', path, body, opts); }
  delete<T = any>(path: string, opts?: RequestOptions) { return this.request<T>('DELETE', path, undefined, opts); }
}
