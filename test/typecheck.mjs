// `npm run typecheck`: both TypeScript projects (the Worker's, and Node's for scripts/bench/tests) checked at
// once, one tsc each, rather than one after the other (~17 s → ~11 s on a 2-core machine). Exits non-zero
// when either fails; each tsc's own output is printed as it comes.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const check = (project) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [tsc, '--noEmit', '-p', project], { stdio: 'inherit' });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    child.on('error', (error) => {
      console.error(`typecheck: could not run tsc for ${project}: ${error.message}`);
      resolve(1);
    });
  });
const codes = await Promise.all(['tsconfig.json', 'tsconfig.node.json'].map(check));
process.exit(codes.some((code) => code !== 0) ? 1 : 0);
