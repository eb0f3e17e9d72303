// Markdown of the model's replies: GitHub-flavoured (marked), sanitised (DOMPurify) before it
// touches the page, drawn again as the reply streams (an open code fence renders as a code block).
//
// Nothing a reply carries may run: DOMPurify drops scripts, event handler attributes, `javascript:`
// and other unsafe URLs, forms and styles; images load only from `data:` (the page's CSP says the
// same); links open in a new tab with `rel="noopener noreferrer"`.
"use strict";

const Markdown = (() => {
  const FORBID_TAGS = ["style", "form", "input", "button", "textarea", "select", "option", "iframe", "object",
                       "embed", "link", "meta", "base", "svg", "math", "video", "audio", "source"];
  const FORBID_ATTR = ["style", "id", "srcset", "action", "formaction", "xlink:href"];
  const LANGUAGE = /^language-([\w+#.-]{1,40})$/;

  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.hasAttribute("class")) {  // only a code block's `language-x` (from the fence) is kept
      const language = node.tagName === "CODE" && LANGUAGE.exec(node.getAttribute("class").trim());
      node.removeAttribute("class");
      if (language) node.dataset.language = language[1];
    }
    if (node.tagName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
    if (node.tagName === "IMG" && !/^data:image\/(png|gif|jpeg|webp);/i.test(node.getAttribute("src") || "")) {
      node.removeAttribute("src");
    }
  });

  function codeBlock(pre, language) {
    const box = document.createElement("div");
    box.className = "code";
    const head = document.createElement("div");
    head.className = "code-head";
    const label = document.createElement("span");
    label.className = "code-lang";
    label.textContent = language || "text";
    const copy = document.createElement("button");
    copy.type = "button";
    copy.className = "copy";
    copy.textContent = "Copy";
    copy.setAttribute("aria-label", `Copy ${language || "code"}`);
    copy.addEventListener("click", async () => {
      const text = pre.textContent;
      try {
        await navigator.clipboard.writeText(text);
      } catch {
        const area = document.createElement("textarea");
        area.value = text;
        document.body.append(area);
        area.select();
        document.execCommand("copy");
        area.remove();
      }
      copy.textContent = "Copied";
      setTimeout(() => { copy.textContent = "Copy"; }, 1500);
    });
    head.append(label, copy);
    pre.replaceWith(box);
    box.append(head, pre);
    pre.tabIndex = 0;  // a wide block scrolls sideways: reachable from the keyboard
  }

  function render(node, text) {
    const html = marked.parse(text, {gfm: true, breaks: false, async: false});
    node.replaceChildren(DOMPurify.sanitize(html, {FORBID_TAGS, FORBID_ATTR, ALLOW_DATA_ATTR: false, RETURN_DOM_FRAGMENT: true}));
    for (const pre of node.querySelectorAll("pre")) codeBlock(pre, pre.querySelector("code")?.dataset.language);
    for (const table of node.querySelectorAll("table")) {
      const wrap = document.createElement("div");
      wrap.className = "table";
      wrap.tabIndex = 0;
      table.replaceWith(wrap);
      wrap.append(table);
    }
  }

  return {render};
})();
