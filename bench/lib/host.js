// What kind of host a run had: `node bench/lib/host.js` prints { rsaSignMs, jsonUs } as JSON, measured in its
// own process in about a second, one thing at a time.
// - rsaSignMs: CPU per RSA-2048 PKCS#1 v1.5 SHA-256 signature (node:crypto, OpenSSL). Every SSO flow, refresh and
//   login flow of both servers signs one ID token, so this fixed cost narrows every ratio between them.
// - jsonUs: CPU per JSON.parse + JSON.stringify of a discovery-sized document: plain JavaScript speed.
// Hosts of this workplace have ranged from 0.29 (`openssl speed`) to 1.1 ms per signature: read a set's ratios with it.
import { generateKeyPairSync, sign } from 'node:crypto';

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000; // ms
};

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const data = Buffer.from('x'.repeat(700));
for (let i = 0; i < 20; i++) sign('sha256', data, privateKey);
const SIGNS = 200;
let start = cpu();
for (let i = 0; i < SIGNS; i++) sign('sha256', data, privateKey);
const rsaSignMs = (cpu() - start) / SIGNS;

const doc = JSON.stringify({
  issuer: 'http://127.0.0.1:3000/api/auth',
  endpoints: Array.from({ length: 12 }, (_, i) => `http://127.0.0.1:3000/api/auth/endpoint-${i}`),
  values: Array.from({ length: 20 }, (_, i) => ({ name: `value_${i}`, supported: [`a${i}`, `b${i}`, `c${i}`] })),
});
let sink = 0;
for (let i = 0; i < 2000; i++) sink += JSON.stringify(JSON.parse(doc)).length;
const ROUNDS = 20000;
start = cpu();
for (let i = 0; i < ROUNDS; i++) sink += JSON.stringify(JSON.parse(doc)).length;
const jsonUs = ((cpu() - start) * 1000) / ROUNDS;

console.log(JSON.stringify({ rsaSignMs, jsonUs, check: sink > 0 }));
