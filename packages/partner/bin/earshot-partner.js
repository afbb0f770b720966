#!/usr/bin/env node
// Committed so npm can link the bin before `tsc -b` has built dist/ (on a fresh install).
import '../dist/cli/earshot-partner.js'
