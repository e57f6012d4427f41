package custom

// moduleName is the name the user's script is imported under; stack frames
// of the script read "script:LINE:COL", which is all an error keeps of them.
const moduleName = "script"

// glueJS is evaluated as a global script in every runtime before the user's
// module is imported. It owns the call convention between Go and the hooks:
// Go passes flat primitive arguments (no JSON, no object building on the Go
// side) and receives one string in the result encoding decoded by
// DecodeResult. The glue validates the hook's result shape in JS, where the
// value lives, and reports a shape problem as a numeric code, so that no
// text from the script or the request reaches an error message.
//
// Builtins the glue relies on are captured before the user's module runs,
// so a script that replaces Array.isArray or RegExp.prototype.exec cannot
// change how its own result is encoded. It could still only hurt its own
// verdict: DecodeResult accepts nothing it does not understand.
const glueJS = `(function () {
"use strict";
const ROLES = ["user", "system", "assistant", "tool"];
const PARTS = ["content", "reasoning", "tool_arguments", "tool_result", "tool_key", "tool_number"];
const PHASES = ["input", "output"];
const STD = ["Error", "TypeError", "RangeError", "SyntaxError", "ReferenceError", "EvalError", "URIError", "InternalError", "AggregateError"];
const freeze = Object.freeze, isArray = Array.isArray, indexOf = Function.prototype.call.bind(Array.prototype.indexOf);
const exec = Function.prototype.call.bind(RegExp.prototype.exec);
const Err = Error, IErr = InternalError, Str = String, PromiseThen = Function.prototype.call.bind(Promise.prototype.then), Prom = Promise;
const ruleRe = /^[A-Za-z0-9_.:-]{1,64}$/;
const locRe = /script:(\d{1,9})(?::(\d{1,9}))?/;
let hooks = [undefined, undefined];
let secrets = freeze({});
let loadState = "P";
let settled = "P";

function where(e) {
	try {
		const s = e !== null && typeof e === "object" ? e.stack : undefined;
		if (typeof s === "string") {
			const m = exec(locRe, s);
			if (m) return "@" + m[1] + (m[2] ? ":" + m[2] : "");
		}
	} catch (_) {}
	return "";
}

// describe names what a hook threw without any of its text: a standard
// error class and a script position, or "M" for the engine's out of memory.
function describe(e) {
	let name = "throw";
	try {
		if (e instanceof IErr && e.message === "out of memory") return "M";
		if (e instanceof Err) {
			const c = e.constructor, n = c ? c.name : "";
			name = indexOf(STD, n) >= 0 ? n : "Error";
		}
	} catch (_) {}
	return "E" + name + where(e);
}

function encode(r, n) {
	try {
		if (r === undefined || r === null) return "A";
		if (typeof r !== "object") return "S1";
		const a = r.action;
		if (a === "allow") return "A";
		if (a === "block") {
			let reason = r.reason, rule = r.rule;
			if (reason === undefined || reason === null) reason = "";
			else if (typeof reason !== "string") return "S3";
			else if (reason.length > 1024) return "S4";
			if (rule === undefined || rule === null) rule = "";
			else if (typeof rule !== "string" || !exec(ruleRe, rule)) return "S5";
			return "B" + rule + "\n" + reason;
		}
		if (a === "replace") {
			const t = r.texts;
			if (!isArray(t) || t.length !== n) return "S6";
			let out = "R";
			for (let i = 0; i < n; i++) {
				const s = t[i];
				if (s === undefined || s === null) continue;
				if (typeof s !== "string") return "S7";
				out += i + "," + s.length + ":" + s;
			}
			return out;
		}
		return "S2";
	} catch (e) {
		return describe(e);
	}
}

// pending holds the texts of a call that came ahead through __gw_push.
let pending = [];

function addTexts(args, from, out) {
	for (let i = from; i + 1 < args.length; i += 2) {
		const p = args[i];
		out[out.length] = { role: ROLES[p >> 4], part: PARTS[p & 15], text: args[i + 1] };
	}
}

globalThis.__gw_push = function () { addTexts(arguments, 0, pending); };

globalThis.__gw_run = function (phase, model) {
	const texts = pending;
	pending = [];
	addTexts(arguments, 2, texts);
	const n = texts.length;
	let r;
	try {
		r = hooks[phase]({ texts: texts }, { model: model, phase: PHASES[phase], secrets: secrets });
		if (r instanceof Prom) {
			settled = "P";
			PromiseThen(r, function (v) { settled = encode(v, n); }, function (e) { settled = describe(e); });
			return "P";
		}
	} catch (e) {
		return describe(e);
	}
	return encode(r, n);
};

globalThis.__gw_settled = function () {
	const s = settled;
	settled = "P";
	return s;
};

globalThis.__gw_boot = function () {
	const s = {};
	for (let i = 0; i + 1 < arguments.length; i += 2) s[arguments[i]] = arguments[i + 1];
	secrets = freeze(s);
	import("` + moduleName + `").then(function (m) {
		const ci = m.checkInput, co = m.checkOutput;
		if (ci !== undefined && typeof ci !== "function") { loadState = "Lthe export checkInput is not a function"; return; }
		if (co !== undefined && typeof co !== "function") { loadState = "Lthe export checkOutput is not a function"; return; }
		if (ci === undefined && co === undefined) { loadState = "Lthe module exports neither checkInput nor checkOutput"; return; }
		hooks = [ci, co];
		loadState = "O" + (ci ? "i" : "") + (co ? "o" : "");
	}, function (e) {
		let msg = "";
		try { msg = Str(e && e.name) + ": " + Str(e && e.message); } catch (_) { msg = "the module failed to load"; }
		if (e instanceof IErr && e.message === "out of memory") { loadState = "M"; return; }
		loadState = "L" + msg + where(e);
	});
};

globalThis.__gw_status = function () { return loadState; };
})();
`
