/* rewrite_shared: the build step that prepares a .cu/.cuh file for the CUDA
 * emulator by rewriting its __shared__ declarations; nothing else changes.
 *
 *   rewrite_shared IN OUT
 *
 * A __shared__ variable is one per BLOCK. The emulator runs blocks one at a
 * time, so a function-level `static` would be correct, but the emulator does
 * better: it allocates each block's variables fresh, fills them with 0xff
 * bytes (a read before any write gives NaN or -1) and frees them at the
 * block's end, so AddressSanitizer sees an index past the end. Inside a
 * function,
 *
 *   __shared__ float tile[TILE][TILE + 1], row[TILE];
 *   extern __shared__ float smem[];
 *
 * become (on the same line, so compiler messages keep their line numbers)
 *
 *   static const char cuda_emu_tag_12_0 = 0; auto &tile = *reinterpret_cast<
 *       float (*)[TILE][TILE + 1]>(::cuda_emu::shared_var(&cuda_emu_tag_12_0,
 *       sizeof(float[TILE][TILE + 1]), alignof(float[TILE][TILE + 1]), "tile")); ...
 *   auto smem = reinterpret_cast<float *>(::cuda_emu::dynamic_shared());
 *
 * (the static tag is the variable's identity, one per template instance).
 * Declarations this tool does not recognise (inside a macro definition, or
 * at namespace scope) are left alone: cuda_runtime.h defines __shared__ as
 * `static`, which still works. The output starts with #line, so messages
 * name the original file. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>
#include <vector>

static std::string src;
static std::vector<char> code;   /* 1 where src[i] is code (not comment, string, directive) */

static void die(const char *msg, const std::string &detail) {
    fprintf(stderr, "rewrite_shared: %s%s\n", msg, detail.c_str());
    exit(1);
}

static void classify() {
    size_t n = src.size();
    code.assign(n, 1);
    bool line_start = true;
    for (size_t i = 0; i < n;) {
        char c = src[i];
        if (line_start && (c == ' ' || c == '\t')) { i++; continue; }
        if (line_start && c == '#') {                 /* directive, with continuations */
            while (i < n && src[i] != '\n') {
                if (src[i] == '\\' && i + 1 < n && src[i + 1] == '\n') { code[i] = 0; code[i + 1] = 0; i += 2; continue; }
                code[i++] = 0;
            }
            continue;
        }
        line_start = false;
        if (c == '\n') { line_start = true; i++; continue; }
        if (c == '/' && i + 1 < n && src[i + 1] == '/') {
            while (i < n && src[i] != '\n') code[i++] = 0;
            continue;
        }
        if (c == '/' && i + 1 < n && src[i + 1] == '*') {
            size_t e = src.find("*/", i + 2);
            e = e == std::string::npos ? n : e + 2;
            for (; i < e; i++) if (src[i] != '\n') code[i] = 0;
            continue;
        }
        if (c == '"' || c == '\'') {
            size_t j = i + 1;
            while (j < n && src[j] != c) j += src[j] == '\\' ? 2 : 1;
            for (size_t k = i; k <= j && k < n; k++) code[k] = 0;
            i = j + 1;
            continue;
        }
        i++;
    }
}

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static std::string trim(const std::string &s) {
    size_t a = 0, b = s.size();
    while (a < b && isspace((unsigned char)s[a])) a++;
    while (b > a && isspace((unsigned char)s[b - 1])) b--;
    return s.substr(a, b - a);
}

/* Remove a word (and a following parenthesised argument list when `args`). */
static bool remove_word(std::string &s, const char *w, bool args) {
    size_t wl = strlen(w);
    for (size_t p = s.find(w); p != std::string::npos; p = s.find(w, p + 1)) {
        if (p > 0 && ident_char(s[p - 1])) continue;
        if (p + wl < s.size() && ident_char(s[p + wl])) continue;
        size_t e = p + wl;
        if (args) {
            while (e < s.size() && isspace((unsigned char)s[e])) e++;
            if (e < s.size() && s[e] == '(') {
                int depth = 0;
                for (; e < s.size(); e++) {
                    if (s[e] == '(') depth++;
                    else if (s[e] == ')' && --depth == 0) { e++; break; }
                }
            }
        }
        s.erase(p, e - p);
        return true;
    }
    return false;
}

/* Top-level comma split (outside (), [], {}, <>). */
static std::vector<std::string> split_declarators(const std::string &s) {
    std::vector<std::string> out;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); i++) {
        char c = s[i];
        if (c == '(' || c == '[' || c == '{' || c == '<') depth++;
        else if (c == ')' || c == ']' || c == '}' || c == '>') depth--;
        else if (c == ',' && depth == 0) { out.push_back(s.substr(start, i - start)); start = i + 1; }
    }
    out.push_back(s.substr(start));
    return out;
}

struct Decl { std::string stars, name, dims; };

/* "*name[4][8]" -> stars, name, dims. */
static bool parse_declarator(const std::string &d, Decl &out) {
    std::string s = trim(d);
    size_t i = 0;
    while (i < s.size() && (s[i] == '*' || s[i] == '&' || isspace((unsigned char)s[i]))) {
        if (!isspace((unsigned char)s[i])) out.stars += s[i];
        i++;
    }
    size_t a = i;
    while (i < s.size() && ident_char(s[i])) i++;
    if (i == a) return false;
    out.name = s.substr(a, i - a);
    out.dims = trim(s.substr(i));
    return out.dims.empty() || out.dims[0] == '[';
}

/* Is position p inside a function body? Braces opened after ')' ']' or
 * after else/do/try/const/noexcept/... are blocks of code. */
static bool in_function(size_t p) {
    std::vector<bool> stack;
    for (size_t i = 0; i < p; i++) {
        if (!code[i]) continue;
        if (src[i] == '{') {
            size_t j = i;
            while (j > 0 && (!code[j - 1] || isspace((unsigned char)src[j - 1]))) j--;
            bool fn = false;
            if (j > 0) {
                char c = src[j - 1];
                if (c == ')' || c == ']') fn = true;
                else if (ident_char(c)) {
                    size_t k = j;
                    while (k > 0 && ident_char(src[k - 1])) k--;
                    std::string w = src.substr(k, j - k);
                    fn = w == "else" || w == "do" || w == "try" || w == "const" ||
                         w == "noexcept" || w == "override" || w == "final" || w == "mutable";
                }
            }
            bool outer = !stack.empty() && stack.back();
            stack.push_back(fn || outer);
        } else if (src[i] == '}') {
            if (!stack.empty()) stack.pop_back();
        }
    }
    return !stack.empty() && stack.back();
}

static int line_of(size_t p) {
    int l = 1;
    for (size_t i = 0; i < p; i++) l += src[i] == '\n';
    return l;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: rewrite_shared IN OUT\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) die("cannot open ", argv[1]);
    char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) src.append(buf, got);
    fclose(f);
    classify();

    std::string out = "#line 1 \"" + std::string(argv[1]) + "\"\n";
    size_t copied = 0;
    const char *kw = "__shared__";
    size_t kwl = strlen(kw);
    for (size_t p = src.find(kw); p != std::string::npos; p = src.find(kw, p + kwl)) {
        if (p < copied || !code[p]) continue;
        if ((p > 0 && ident_char(src[p - 1])) || (p + kwl < src.size() && ident_char(src[p + kwl]))) continue;
        if (!in_function(p)) continue;
        /* The statement: from after the previous ; { } (in code) to the next ;. */
        size_t s = p;
        while (s > copied && !(code[s - 1] && (src[s - 1] == ';' || src[s - 1] == '{' || src[s - 1] == '}'))) s--;
        size_t e = p;
        while (e < src.size() && !(code[e] && src[e] == ';')) e++;
        if (e == src.size()) die("unterminated __shared__ declaration at line ", std::to_string(line_of(p)));
        std::string stmt;
        for (size_t i = s; i < e; i++) stmt += code[i] ? src[i] : ' ';
        int line = line_of(p);
        std::string body = stmt;
        bool is_extern = remove_word(body, "extern", false);
        remove_word(body, "__shared__", false);
        remove_word(body, "static", false);
        while (remove_word(body, "__align__", true) || remove_word(body, "alignas", true) ||
               remove_word(body, "__attribute__", true)) {}
        body = trim(body);
        /* Leading whitespace (and line breaks) of the statement are kept. */
        size_t lead = 0;
        while (lead < stmt.size() && isspace((unsigned char)stmt[lead])) lead++;
        std::vector<std::string> parts = split_declarators(body);
        /* First part: TYPE DECLARATOR. The declarator starts at the stars
         * before the last identifier that precedes the dimensions. */
        std::string first = trim(parts[0]);
        size_t bracket = first.find('[');
        size_t name_end = bracket == std::string::npos ? first.size() : bracket;
        while (name_end > 0 && isspace((unsigned char)first[name_end - 1])) name_end--;
        size_t name_start = name_end;
        while (name_start > 0 && ident_char(first[name_start - 1])) name_start--;
        size_t decl_start = name_start;
        while (decl_start > 0 && (first[decl_start - 1] == '*' || first[decl_start - 1] == '&' ||
                                  isspace((unsigned char)first[decl_start - 1])))
            decl_start--;
        std::string type = trim(first.substr(0, decl_start));
        if (type.empty() || name_start == name_end)
            die("cannot read the __shared__ declaration at line ", std::to_string(line) + ": " + trim(stmt));
        parts[0] = first.substr(decl_start);
        std::string repl;
        int k = 0;
        for (const std::string &part : parts) {
            Decl d;
            if (!parse_declarator(part, d))
                die("cannot read the __shared__ declarator at line ", std::to_string(line) + ": " + part);
            std::string t = type + (d.stars.empty() ? "" : " " + d.stars);
            if (is_extern) {
                if (d.dims.compare(0, 2, "[]") != 0)
                    die("extern __shared__ needs an unsized array at line ", std::to_string(line));
                std::string rest = trim(d.dims.substr(2));
                std::string ptr = rest.empty() ? t + " *" : t + " (*)" + rest;
                repl += "auto " + d.name + " = reinterpret_cast<" + ptr +
                        ">(::cuda_emu::dynamic_shared()); ";
            } else {
                std::string tag = "cuda_emu_tag_" + std::to_string(line) + "_" + std::to_string(k);
                std::string full = t + (d.dims.empty() ? "" : " " + d.dims);
                std::string ptr = d.dims.empty() ? t + " *" : t + " (*)" + d.dims;
                repl += "static const char " + tag + " = 0; auto &" + d.name +
                        " = *reinterpret_cast<" + ptr + ">(::cuda_emu::shared_var(&" + tag +
                        ", sizeof(" + full + "), alignof(" + full + "), \"" + d.name + "\")); ";
            }
            k++;
        }
        out.append(src, copied, s - copied);
        out += stmt.substr(0, lead);
        out += repl;
        /* keep the line count */
        for (size_t i = s + lead; i <= e; i++) if (src[i] == '\n') out += '\n';
        copied = e + 1;
    }
    out.append(src, copied, std::string::npos);
    FILE *o = fopen(argv[2], "wb");
    if (!o) die("cannot write ", argv[2]);
    fwrite(out.data(), 1, out.size(), o);
    fclose(o);
    return 0;
}
