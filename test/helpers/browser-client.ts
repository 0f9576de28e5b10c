// A minimal user agent for walking the hosted pages over real HTTP: a cookie jar, manual redirects
// (so a test sees every hop), and form submission with the page's hidden fields.
export interface Response {
  status: number;
  url: string;
  location: string | undefined;
  headers: Headers;
  body: string;
}

export class BrowserClient {
  readonly cookies = new Map<string, string>();

  #store(res: globalThis.Response) {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(
    url: string,
    init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<Response> {
    const headers: Record<string, string> = { accept: 'text/html', ...init.headers };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(init.form).toString();
    }
    const res = await fetch(url, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      headers,
      body,
      redirect: 'manual',
    });
    this.#store(res);
    const location = res.headers.get('location') ?? undefined;
    return {
      status: res.status,
      url,
      location: location ? new URL(location, url).toString() : undefined,
      headers: res.headers,
      body: await res.text(),
    };
  }

  /** Follows redirects until a non-redirect answer or a URL for which `stop` is true. */
  async follow(
    url: string,
    stop: (url: string) => boolean = () => false,
    init: Parameters<BrowserClient['request']>[1] = {},
  ): Promise<Response> {
    let res = await this.request(url, init);
    for (let hops = 0; res.location && hops < 20; hops++) {
      if (stop(res.location)) return res;
      res = await this.request(res.location);
    }
    return res;
  }

  /** Hidden inputs of the first form whose action ends with `action`. */
  static hiddenFields(html: string, action: string): Record<string, string> {
    const form = new RegExp(
      `<form[^>]*action="[^"]*${action.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"[^>]*>([\\s\\S]*?)</form>`,
    ).exec(html);
    if (!form) throw new Error(`no form posting to ${action}`);
    const fields: Record<string, string> = {};
    for (const m of form[1]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      fields[m[1]!] = m[2]!
        .replace(/&amp;/g, '&')
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>');
    }
    return fields;
  }
}
