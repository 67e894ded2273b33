#!/usr/bin/env node
// Entry point: runs the TypeScript CLI through tsx's loader, so there is no build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
