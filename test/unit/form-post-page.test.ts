// The form_post page (plugins/pages/form-post.ts) without HTTP: its CSP names only the redirect_uri's origin (or,
// for a custom scheme, that scheme), its script is exactly the one the hash allows, and every value is escaped.
import { createHash } from 'node:crypto';
import t from 'tap';
import { formPostCsp, formPostPage } from '../../plugins/pages/form-post.js';

t.test('form-action: the origin of an http(s) redirect_uri, the scheme of a custom one', async (t) => {
  t.match(formPostCsp('https://rp.example/cb?x=1'), /; form-action https:\/\/rp\.example;/);
  t.match(formPostCsp('http://127.0.0.1:8123/cb'), /; form-action http:\/\/127\.0\.0\.1:8123;/);
  t.match(formPostCsp('https://rp.example:8443/a/b'), /; form-action https:\/\/rp\.example:8443;/);
  t.match(formPostCsp('com.example.app:/oauth/cb'), /; form-action com\.example\.app:;/);
  t.match(formPostCsp('https://rp.example/cb'), /^default-src 'none'; script-src 'sha256-[A-Za-z0-9+/]{43}='; /);
});

t.test('the page: one script, the hashed one; the action and every field escaped', async (t) => {
  const page = formPostPage('https://rp.example/cb?a=1&b="2"', { state: '</script><script>x()</script>', 'n"m': '&' });
  const scripts = [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
  t.same(scripts, ['document.forms[0].submit();']);
  const hash = createHash('sha256').update(scripts[0]!).digest('base64');
  t.match(formPostCsp('https://rp.example/cb'), `script-src 'sha256-${hash}'`);
  t.match(page, '<form method="post" action="https://rp.example/cb?a=1&amp;b=&quot;2&quot;">');
  t.match(page, 'name="state" value="&lt;/script&gt;&lt;script&gt;x()&lt;/script&gt;"');
  t.match(page, 'name="n&quot;m" value="&amp;"');
  t.equal((page.match(/<script>/g) ?? []).length, 1);
});
