import t from 'tap';
import {
  isLoopbackHost,
  originOf,
  redirectPathProblem,
  redirectUriProblem,
  webOriginProblem,
  webUrlProblem,
} from '../../src/oauth/redirect-uri.js';

t.test('redirect URIs: https anywhere, http only on loopback', async (t) => {
  for (const ok of [
    'https://app.example.com/cb',
    'https://app.example.com:8443/a/b?x=1',
    'http://localhost:8080/cb',
    'http://127.0.0.1/cb',
    'http://[::1]:3000/cb',
    'http://dev.localhost/cb',
  ]) {
    t.equal(redirectUriProblem(ok), undefined, ok);
  }
  t.match(redirectUriProblem('http://app.example.com/cb'), /loopback/);
  t.match(redirectUriProblem('https://app.example.com/cb#frag'), /fragment/);
  t.match(redirectUriProblem('/cb'), /absolute URL/);
  t.match(redirectUriProblem('javascript:alert(1)'), /scheme javascript: is not allowed/);
  t.match(redirectUriProblem('https://user:pw@app.example.com/cb'), /credentials/);
  t.match(redirectUriProblem('https://app.example.com/c b'), /white space/);
  t.match(redirectUriProblem(`https://a.example/${'x'.repeat(2050)}`), /2048/);
});

t.test('web origins must be bare, canonical origins', async (t) => {
  t.equal(webOriginProblem('https://app.example.com'), undefined);
  t.equal(webOriginProblem('http://localhost:5173'), undefined);
  t.match(webOriginProblem('https://app.example.com/'), /did you mean https:\/\/app.example.com\?/);
  t.match(webOriginProblem('https://app.example.com/path'), /bare origin/);
  t.match(webOriginProblem('https://APP.example.com'), /bare origin/);
  t.match(webOriginProblem('https://app.example.com:443'), /bare origin/);
  t.match(webOriginProblem('http://app.example.com'), /loopback/);
  t.match(webOriginProblem('app.example.com'), /must be an origin/);
  t.match(webOriginProblem('null'), /must be an origin/);
});

t.test('post-verification paths stay on the application origin', async (t) => {
  t.equal(redirectPathProblem('/welcome'), undefined);
  t.equal(redirectPathProblem('/a/b?x=1'), undefined);
  for (const bad of ['welcome', '//evil.example', '/\\evil.example', 'https://evil.example/', '/a b', '/a#b']) {
    t.ok(redirectPathProblem(bad), bad);
  }
});

t.test('logo and picture URLs', async (t) => {
  t.equal(webUrlProblem('https://cdn.example.com/logo.png'), undefined);
  t.ok(webUrlProblem('http://cdn.example.com/logo.png'));
  t.ok(webUrlProblem('data:image/png;base64,AAAA'));
});

t.test('loopback hosts and origins', async (t) => {
  t.ok(isLoopbackHost('127.10.0.1'));
  t.ok(isLoopbackHost('[::1]'));
  t.notOk(isLoopbackHost('127.example.com'));
  t.equal(originOf('https://a.example:8443/x?y'), 'https://a.example:8443');
  t.equal(originOf('not a url'), undefined);
});
