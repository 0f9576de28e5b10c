// The stylesheet of the welcome page (/) and the demo relying party (/demo): the kit's shared rules on a
// wider card than the hosted login pages, with code blocks that scroll inside themselves on a phone.
import { CSS } from '../pages/kit.js';

export const WIDE_STYLESHEET = `${CSS.reset}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;color:#1b1f24}
main{background:#fff;max-width:48rem;margin:1rem auto;padding:1.5rem;border-radius:12px;\
box-shadow:0 2px 12px rgba(0,0,0,.08)}
@media (max-width:30rem){main{margin:0;border-radius:0;padding:1rem}}
${CSS.heading}
h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
a{color:#1d4ed8}a:focus,button:focus{outline:3px solid #2563eb;outline-offset:2px}
code,pre{font:.85rem/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
code{overflow-wrap:anywhere}
pre{background:#f6f8fa;border:1px solid #e5e7eb;border-radius:6px;padding:.6rem .8rem;overflow-x:auto;max-width:100%}
dl{display:grid;grid-template-columns:minmax(0,max-content) minmax(0,1fr);gap:.35rem 1rem;margin:0}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
@media (max-width:30rem){dl{grid-template-columns:minmax(0,1fr)}dd{margin-bottom:.4rem}}
ul{padding-left:1.2rem}li{margin:.25rem 0}
button{background:#1d4ed8;color:#fff;border:0;border-radius:6px;\
padding:.6rem 1.1rem;font:inherit;font-weight:600;cursor:pointer}
button.secondary{background:#e5e7eb;color:#1b1f24}
.buttons{display:flex;flex-wrap:wrap;gap:.75rem;margin:1rem 0}.buttons form{margin:0}
a.button{display:inline-block;background:#1d4ed8;color:#fff;border-radius:6px;padding:.6rem 1.1rem;\
font-weight:600;text-decoration:none}
.demo-note{background:#eff6ff;color:#1e3a8a;padding:.6rem .8rem;border-radius:6px}
${CSS.alert}
${CSS.notice}
${CSS.muted}
`;
