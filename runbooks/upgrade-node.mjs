#!/usr/bin/env zx
// One node, by hand: zx runbooks/upgrade-node.mjs NODE --to containerd=VERSION [--dry-run] ... (see --help).
// Thin on purpose: the runbook is the compiled library in dist/ (npm install builds it).
import { upgradeNodeMain } from '../dist/cli/upgrade-node.js';
import { scriptArgs } from './args.mjs';

process.exitCode = await upgradeNodeMain(scriptArgs(import.meta.url));
