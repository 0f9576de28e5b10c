// Shared by bench/flow.js, bench/refresh.js, bench/external.js and bench/startup.js: the modules under bench/lib/,
// re-exported. Imports go one way only, no cycles: database.js and http.js import core.js, process.js imports
// core.js and database.js. (lib/measure.js, external.js's autocannon runs, imports core.js and process.js and
// is not re-exported here.)
//  - lib/core.js: option parsing, the run's state (`run`), timing, formatting, CPU shares, machine info;
//  - lib/database.js: the loopback-only DATABASE_URL, a fresh idp_bench_<random> database (dropped at the end),
//    DATA_DIR and the server's environment;
//  - lib/process.js: the build-if-stale check, the server processes (own process group, SIGTERM then SIGKILL,
//    log lines by level), Ctrl-C handling, the cleanup and runMain;
//  - lib/http.js: HTTP on loopback with a cookie-jar browser, the hosted sign-in pages, the admin API.
// One benchmark per process: the state (`run`) belongs to the script that imported this module.
export * from './lib/core.js';
export * from './lib/database.js';
export * from './lib/http.js';
export * from './lib/process.js';
