// The account pages' small display helpers (plugins/account/layout.ts): a user agent in a short readable form,
// moments in UTC, and the status line table that never shows query text.
import t from 'tap';
import { describeUserAgent, when, whenText } from '../../plugins/account/layout.js';
import { statusMessage, STATUS_MESSAGES } from '../../plugins/account/views.js';

t.test('user agents in a short readable form', async (t) => {
  const cases: Array<[string | null, string]> = [
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
      'Chrome on Windows',
    ],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 ' +
        'Safari/537.36 Edg/131.0.0.0',
      'Edge on Windows',
    ],
    [
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 Version/17.0 Safari/605.1.15',
      'Safari on macOS',
    ],
    ['Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0', 'Firefox on Linux'],
    [
      'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile ' +
        'Safari/537.36',
      'Chrome on Android',
    ],
    ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 CriOS/131.0 Mobile', 'Chrome on iOS'],
    [
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 HeadlessChrome/131.0.0.0 Safari/537.36',
      'Headless Chrome on Linux',
    ],
    ['curl/8.5.0', 'curl'],
    ['lightMyRequest', 'Other (lightMyRequest)'],
    ['', 'Unknown device'],
    [null, 'Unknown device'],
  ];
  for (const [ua, expected] of cases) t.equal(describeUserAgent(ua), expected, String(ua));
});

t.test('moments are shown in UTC to the minute, with the ISO value in datetime', async (t) => {
  t.equal(
    when('2026-11-24T13:05:59.123Z').value,
    '<time datetime="2026-11-24T13:05:59.123Z">2026-11-24 13:05 UTC</time>',
  );
  t.equal(when(null).value, 'Never');
  t.equal(whenText('2026-01-02T03:04:05Z'), '2026-01-02 03:04 UTC');
  t.equal(when('not a date').value, 'not a date');
});

t.test('a status line comes only from the fixed table', async (t) => {
  for (const code of Object.keys(STATUS_MESSAGES)) t.equal(statusMessage(code), STATUS_MESSAGES[code]);
  for (const code of [undefined, '', 'constructor', 'toString', '__proto__', 'hasOwnProperty', '<b>x</b>']) {
    t.equal(statusMessage(code), undefined, String(code));
  }
});
