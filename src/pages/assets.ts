/**
 * The pages' stylesheet and script, served from /assets/ (the CSP allows
 * only same-origin script and style, never inline). Pages work without the
 * script: it only filters as you type, copies snippets and switches version
 * on select.
 */

export const STYLESHEET = `:root{color-scheme:light dark;--bg:#f7f8fa;--fg:#171b24;--muted:#555e6e;--line:#dfe3ea;--card:#fff;--accent:#4338ca;--accent-soft:#eef0ff;--code:#f1f3f7;--badge:#eceff4;--warn:#8a4b00;--warn-soft:#fff5e6;--danger:#b42318;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",sans-serif}
@media (prefers-color-scheme:dark){:root{--bg:#0d1017;--fg:#e7eaf0;--muted:#a0a8b8;--line:#272d3a;--card:#151922;--accent:#a5b0ff;--accent-soft:#1f2440;--code:#1a1f2a;--badge:#232a37;--warn:#ffc46b;--warn-soft:#2d2312;--danger:#ff8a80}}
*{box-sizing:border-box}html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);min-height:100vh;display:flex;flex-direction:column}
a{color:var(--accent);text-underline-offset:2px}a:hover{text-decoration-thickness:2px}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px;border-radius:4px}
.wrap{width:100%;max-width:70rem;margin:0 auto;padding:0 1.25rem}
.skip{position:absolute;left:-999px;top:0;background:var(--card);padding:.5rem 1rem;z-index:2}.skip:focus{left:1rem}
.site{background:var(--card);border-bottom:1px solid var(--line)}
.site .wrap{display:flex;align-items:center;gap:1rem;min-height:3.5rem;flex-wrap:wrap}
.brand{font-weight:700;color:var(--fg);text-decoration:none;display:flex;align-items:center;gap:.5rem;letter-spacing:-.01em}
.brand svg{width:1.5rem;height:1.5rem}.brand small{font-weight:400;color:var(--muted)}
.site nav{margin-left:auto;display:flex;gap:1rem;align-items:center;font-size:.95rem}
main{flex:1;padding:2rem 0 3rem}
footer{border-top:1px solid var(--line);color:var(--muted);font-size:.875rem;padding:1.25rem 0}
h1{font-size:1.9rem;line-height:1.2;margin:0 0 .4rem;letter-spacing:-.02em;word-break:break-word}
h2{font-size:1.3rem;margin:2rem 0 .75rem;letter-spacing:-.01em}h3{font-size:1.05rem;margin:1.5rem 0 .5rem}
p{margin:.5rem 0}.lead{color:var(--muted);font-size:1.05rem;margin:0 0 1.5rem}.muted{color:var(--muted)}
code,pre,kbd{font-family:var(--mono);font-size:.875em}
code{background:var(--code);padding:.1em .35em;border-radius:4px;word-break:break-word}
.crumbs{font-size:.9rem;color:var(--muted);margin-bottom:.75rem}.crumbs a{color:var(--muted)}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:1.1rem 1.25rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(18rem,1fr));gap:1rem;list-style:none;padding:0;margin:0}
.grid li a{display:block;height:100%;text-decoration:none;color:inherit;transition:border-color .15s}
.grid li a:hover,.grid li a:focus-visible{border-color:var(--accent)}
.grid .name{font-weight:650;color:var(--accent);font-size:1.05rem}.grid .addr{font-family:var(--mono);font-size:.8rem;color:var(--muted);word-break:break-all}
.grid .desc{margin:.5rem 0 .25rem;font-size:.95rem}
.badge{display:inline-block;font-size:.75rem;font-weight:600;padding:.1rem .5rem;border-radius:999px;background:var(--badge);color:var(--fg);vertical-align:middle;white-space:nowrap}
.badge.pre{background:var(--warn-soft);color:var(--warn)}.badge.accent{background:var(--accent-soft);color:var(--accent)}
.filter{display:flex;gap:.5rem;margin:0 0 1.25rem;max-width:32rem}
input,select,button{font:inherit;color:inherit}
input[type=search],input[type=password],select{flex:1;min-width:0;padding:.55rem .75rem;border:1px solid var(--line);border-radius:8px;background:var(--card)}
button,.button{padding:.5rem .95rem;border:1px solid var(--accent);border-radius:8px;background:var(--accent);color:var(--card);font-weight:600;cursor:pointer;text-decoration:none;display:inline-block}
button.quiet{background:transparent;color:var(--accent)}
.layout{display:grid;grid-template-columns:minmax(0,1fr) 19rem;gap:2rem;align-items:start}
@media (max-width:52rem){.layout{grid-template-columns:minmax(0,1fr)}}
.side{position:sticky;top:1rem}.side h2{margin-top:0;font-size:1rem}
.snippet{margin:0 0 1.25rem}.snippet-head{display:flex;justify-content:space-between;align-items:center;gap:.5rem;margin-bottom:.35rem}
.snippet-head span{font-weight:600;font-size:.95rem}.snippet-head button{padding:.2rem .65rem;font-size:.85rem}
pre{background:var(--code);border:1px solid var(--line);border-radius:8px;padding:.85rem 1rem;overflow-x:auto;margin:0;line-height:1.45}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{text-align:left;padding:.5rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:.8rem;text-transform:uppercase;letter-spacing:.04em}
.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:10px;background:var(--card)}.scroll table td:first-child,.scroll table th:first-child{padding-left:1rem}
.hash{font-family:var(--mono);font-size:.78rem;word-break:break-all;color:var(--muted)}
.copyable{user-select:all;-webkit-user-select:all;cursor:text}td.num{white-space:nowrap}
.versions{list-style:none;padding:0;margin:0;max-height:28rem;overflow-y:auto;border:1px solid var(--line);border-radius:10px;background:var(--card)}
.versions li{display:flex;justify-content:space-between;gap:.5rem;padding:.45rem .8rem;border-bottom:1px solid var(--line);font-size:.92rem}
.versions li:last-child{border-bottom:0}.versions li[aria-current]{background:var(--accent-soft);font-weight:600}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.35rem 1rem;margin:0}.facts dt{color:var(--muted)}.facts dd{margin:0;word-break:break-word}
.note{border-left:4px solid var(--warn);background:var(--warn-soft);padding:.75rem 1rem;border-radius:0 8px 8px 0;margin:1rem 0}
.attr{padding:.7rem 0;border-bottom:1px solid var(--line)}.attr:last-child{border-bottom:0}
.attr-name{font-family:var(--mono);font-weight:650;font-size:.95rem}.attr .badge{margin-left:.35rem}
.attr .badge.req{background:var(--accent-soft);color:var(--accent)}.attr .badge.dep{background:var(--warn-soft);color:var(--warn)}
.nested{margin:.5rem 0 0 .25rem;padding-left:1rem;border-left:2px solid var(--line)}
.toc{list-style:none;padding:0;margin:0;font-size:.92rem}.toc li{padding:.15rem 0}.toc a{font-family:var(--mono);font-size:.85rem}
.empty{padding:2rem;text-align:center;color:var(--muted)}
.error{color:var(--danger);font-weight:600}
.login{max-width:26rem;margin:2rem auto}.login form{display:flex;flex-direction:column;gap:.75rem}.login label{font-weight:600}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.meta{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem;margin:0 0 1rem}
.inline{display:inline}.nojs-hide[hidden]{display:none}
section+section{margin-top:.5rem}
h1 code{background:none;padding:0;font-size:.95em}
@media (max-width:40rem){h1{font-size:1.55rem}.brand small{display:none}.site nav{margin-left:auto}main{padding-top:1.25rem}.facts{grid-template-columns:1fr}.facts dt{margin-top:.4rem}.site nav .who{display:none}}
`;

export const SCRIPT = `(function(){
var f=document.querySelector('[data-filter]');
if(f){var items=[].slice.call(document.querySelectorAll('[data-name]')),count=document.querySelector('[data-count]');
var apply=function(){var q=f.value.trim().toLowerCase(),n=0;items.forEach(function(el){var show=!q||el.getAttribute('data-name').indexOf(q)>=0;el.hidden=!show;if(show)n++;});if(count)count.textContent=n+(n===1?' provider':' providers');};
f.addEventListener('input',apply);var form=f.form;if(form)form.addEventListener('submit',function(e){e.preventDefault();apply();});}
[].slice.call(document.querySelectorAll('button[data-copy]')).forEach(function(b){b.hidden=false;b.addEventListener('click',function(){
var pre=document.getElementById(b.getAttribute('data-copy'));if(!pre)return;var done=function(){b.textContent='Copied';setTimeout(function(){b.textContent='Copy';},1600);};
if(navigator.clipboard&&navigator.clipboard.writeText){navigator.clipboard.writeText(pre.textContent).then(done,function(){});}else{var r=document.createRange();r.selectNodeContents(pre);var s=getSelection();s.removeAllRanges();s.addRange(r);done();}});});
[].slice.call(document.querySelectorAll('select[data-nav]')).forEach(function(s){s.addEventListener('change',function(){location.href=s.getAttribute('data-nav')+'/'+encodeURIComponent(s.value);});var go=s.form&&s.form.querySelector('button');if(go)go.hidden=true;});
})();
`;
